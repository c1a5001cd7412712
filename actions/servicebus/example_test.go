package servicebus_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/jobscheduler/scheduler/actions"
	"github.com/jobscheduler/scheduler/actions/servicebus"
	"github.com/jobscheduler/scheduler/contracts"
)

// A worker builds one Sender and performs every Service Bus action of
// every execution with it. The namespace "orders-prod" is reached at
// sb://orders-prod.servicebus.windows.net/.
func Example() {
	sender, err := servicebus.New(servicebus.Config{Timeout: 30 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer sender.Close()

	action := &contracts.JobAction{
		Type: contracts.ActionServiceBusQueue,
		ServiceBusQueueMessage: &contracts.ServiceBusQueueMessage{
			QueueName: "orders",
			ServiceBusMessage: contracts.ServiceBusMessage{
				Namespace:      "orders-prod",
				Authentication: &contracts.ServiceBusAuthentication{SASKeyName: "send", SASKey: "<key>"},
				Message:        `{"order":42}`,
				BrokeredMessageProperties: &contracts.BrokeredMessageProperties{
					ContentType: "application/json",
					TimeToLive:  "PT1H",
				},
				CustomMessageProperties: map[string]string{"source": "scheduler"},
			},
		},
	}
	outcome := sender.Send(context.Background(), action, actions.Attempt{ID: "0123456789abcdef0123456789abcdef"})
	fmt.Println(outcome.Succeeded, outcome.Message)
}

package storagequeue_test

import (
	"fmt"

	"github.com/jobscheduler/scheduler/actions/storagequeue"
)

// New checks the endpoint template: the account name must have a place in
// it.
func ExampleNew() {
	_, err := storagequeue.New(storagequeue.Config{EndpointTemplate: "https://myaccount.queue.core.windows.net"})
	fmt.Println(err)

	s, err := storagequeue.New(storagequeue.Config{
		EndpointTemplate: "http://127.0.0.1:10001/{account}", // Azurite's path style
		Region:           "West Europe",
	})
	fmt.Println(err)
	fmt.Println(s.Close())
	// Output:
	// storagequeue: Config.EndpointTemplate "https://myaccount.queue.core.windows.net" has no {account} placeholder for the storage account name
	// <nil>
	// <nil>
}

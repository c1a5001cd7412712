package contracts

// readAction reads an action or an error action. An error action is read the
// same way, its own errorAction included, so that validation can reject it.
func readAction(f field) *JobAction {
	o, ok := f.object()
	if !ok {
		return nil
	}
	return &JobAction{
		Type:                   enumValue(o.get("type"), ActionTypes),
		Request:                readHTTPRequest(o.get("request")),
		QueueMessage:           readQueueMessage(o.get("queueMessage")),
		ServiceBusQueueMessage: readServiceBusQueueMessage(o.get("serviceBusQueueMessage")),
		ServiceBusTopicMessage: readServiceBusTopicMessage(o.get("serviceBusTopicMessage")),
		RetryPolicy:            readRetryPolicy(o.get("retryPolicy")),
		ErrorAction:            readAction(o.get("errorAction")),
	}
}

func readHTTPRequest(f field) *HTTPRequest {
	o, ok := f.object()
	if !ok {
		return nil
	}
	return &HTTPRequest{
		Authentication: readHTTPAuthentication(o.get("authentication")),
		URI:            o.str("uri"),
		Method:         o.str("method"),
		Body:           o.str("body"),
		// HTTP header names are case-insensitive: Accept and accept are one.
		Headers: o.get("headers").stringMap(true),
	}
}

func readHTTPAuthentication(f field) *HTTPAuthentication {
	o, ok := f.object()
	if !ok {
		return nil
	}
	return &HTTPAuthentication{
		Type:                      enumValue(o.get("type"), HTTPAuthTypes),
		Username:                  o.str("username"),
		Password:                  o.str("password"),
		Pfx:                       o.str("pfx"),
		CertificateThumbprint:     o.str("certificateThumbprint"),
		CertificateExpirationDate: o.get("certificateExpirationDate").dateTime(nil),
		CertificateSubjectName:    o.str("certificateSubjectName"),
		Secret:                    o.str("secret"),
		Tenant:                    o.str("tenant"),
		Audience:                  o.str("audience"),
		ClientID:                  o.str("clientId"),
	}
}

func readQueueMessage(f field) *StorageQueueMessage {
	o, ok := f.object()
	if !ok {
		return nil
	}
	return &StorageQueueMessage{
		StorageAccount: o.str("storageAccount"),
		QueueName:      o.str("queueName"),
		SASToken:       o.str("sasToken"),
		Message:        o.str("message"),
	}
}

func readServiceBusQueueMessage(f field) *ServiceBusQueueMessage {
	o, ok := f.object()
	if !ok {
		return nil
	}
	return &ServiceBusQueueMessage{ServiceBusMessage: readServiceBusMessage(o), QueueName: o.str("queueName")}
}

func readServiceBusTopicMessage(f field) *ServiceBusTopicMessage {
	o, ok := f.object()
	if !ok {
		return nil
	}
	return &ServiceBusTopicMessage{ServiceBusMessage: readServiceBusMessage(o), TopicPath: o.str("topicPath")}
}

// readServiceBusMessage reads what queue and topic messages share.
func readServiceBusMessage(o object) ServiceBusMessage {
	return ServiceBusMessage{
		Authentication:            readServiceBusAuthentication(o.get("authentication")),
		BrokeredMessageProperties: readBrokeredMessageProperties(o.get("brokeredMessageProperties")),
		// Service Bus application property names are case-sensitive.
		CustomMessageProperties: o.get("customMessageProperties").stringMap(false),
		Message:                 o.str("message"),
		Namespace:               o.str("namespace"),
		TransportType:           enumValue(o.get("transportType"), TransportTypes),
	}
}

func readServiceBusAuthentication(f field) *ServiceBusAuthentication {
	o, ok := f.object()
	if !ok {
		return nil
	}
	return &ServiceBusAuthentication{
		SASKey:     o.str("sasKey"),
		SASKeyName: o.str("sasKeyName"),
		Type:       enumValue(o.get("type"), ServiceBusAuthTypes),
	}
}

func readBrokeredMessageProperties(f field) *BrokeredMessageProperties {
	o, ok := f.object()
	if !ok {
		return nil
	}
	return &BrokeredMessageProperties{
		ContentType:             o.str("contentType"),
		CorrelationID:           o.str("correlationId"),
		ForcePersistence:        o.get("forcePersistence").boolean(),
		Label:                   o.str("label"),
		MessageID:               o.str("messageId"),
		PartitionKey:            o.str("partitionKey"),
		ReplyTo:                 o.str("replyTo"),
		ReplyToSessionID:        o.str("replyToSessionId"),
		ScheduledEnqueueTimeUTC: o.get("scheduledEnqueueTimeUtc").dateTime(nil),
		SessionID:               o.str("sessionId"),
		TimeToLive:              o.get("timeToLive").duration(),
		To:                      o.str("to"),
		ViaPartitionKey:         o.str("viaPartitionKey"),
	}
}

func readRetryPolicy(f field) *RetryPolicy {
	o, ok := f.object()
	if !ok {
		return nil
	}
	return &RetryPolicy{
		RetryType:     enumValue(o.get("retryType"), RetryTypes),
		RetryInterval: o.get("retryInterval").duration(),
		RetryCount:    o.get("retryCount").integer(),
	}
}

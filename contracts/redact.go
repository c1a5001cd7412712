package contracts

// Redacted returns a deep copy of p with every secret emptied, in the action
// and its error actions: the storage queue SAS token, the Service Bus SAS key,
// and the HTTP authentication password, PFX and OAuth secret. It is what the
// API returns and what may be logged; p is not changed.
func (p JobProperties) Redacted() JobProperties {
	c := p.Clone()
	for a := c.Action; a != nil; a = a.ErrorAction {
		redactAction(a)
	}
	return c
}

func redactAction(a *JobAction) {
	if r := a.Request; r != nil && r.Authentication != nil {
		r.Authentication.Password = ""
		r.Authentication.Pfx = ""
		r.Authentication.Secret = ""
	}
	if q := a.QueueMessage; q != nil {
		q.SASToken = ""
	}
	if m := a.ServiceBusQueueMessage; m != nil && m.Authentication != nil {
		m.Authentication.SASKey = ""
	}
	if m := a.ServiceBusTopicMessage; m != nil && m.Authentication != nil {
		m.Authentication.SASKey = ""
	}
}

package contracts

import (
	"maps"
	"slices"
)

// Clone returns a deep copy of p: the copy shares no pointer, slice or map
// with p, so either can be changed without affecting the other. Nil and
// empty slices and maps stay nil and empty.
func (p JobProperties) Clone() JobProperties {
	p.StartTime = clonePtr(p.StartTime)
	p.Action = cloneAction(p.Action)
	p.Recurrence = cloneRecurrence(p.Recurrence)
	p.SetSecrets = slices.Clone(p.SetSecrets)
	p.PauseAfterFaults = clonePtr(p.PauseAfterFaults)
	if p.Status != nil {
		s := *p.Status
		s.LastExecutionTime = clonePtr(s.LastExecutionTime)
		s.NextExecutionTime = clonePtr(s.NextExecutionTime)
		s.LastStatus = clonePtr(s.LastStatus)
		p.Status = &s
	}
	return p
}

// clonePtr copies the value p points to. Only for types without pointers,
// slices or maps inside.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func cloneRecurrence(r *Recurrence) *Recurrence {
	if r == nil {
		return nil
	}
	c := *r
	c.Interval = clonePtr(r.Interval)
	c.Count = clonePtr(r.Count)
	c.EndTime = clonePtr(r.EndTime)
	c.ExcludedCalendars = slices.Clone(r.ExcludedCalendars)
	if s := r.Schedule; s != nil {
		c.Schedule = &Schedule{
			WeekDays:           slices.Clone(s.WeekDays),
			Hours:              slices.Clone(s.Hours),
			Minutes:            slices.Clone(s.Minutes),
			MonthDays:          slices.Clone(s.MonthDays),
			MonthlyOccurrences: slices.Clone(s.MonthlyOccurrences),

			MonthlyBusinessDays: slices.Clone(s.MonthlyBusinessDays),
		}
		for i, o := range c.Schedule.MonthlyOccurrences {
			c.Schedule.MonthlyOccurrences[i].Occurrence = clonePtr(o.Occurrence)
		}
	}
	return &c
}

func cloneAction(a *JobAction) *JobAction {
	if a == nil {
		return nil
	}
	c := *a
	if r := a.Request; r != nil {
		req := *r
		req.Headers = maps.Clone(r.Headers)
		if auth := r.Authentication; auth != nil {
			ac := *auth
			ac.CertificateExpirationDate = clonePtr(auth.CertificateExpirationDate)
			req.Authentication = &ac
		}
		c.Request = &req
	}
	c.QueueMessage = clonePtr(a.QueueMessage)
	if m := a.ServiceBusQueueMessage; m != nil {
		c.ServiceBusQueueMessage = &ServiceBusQueueMessage{ServiceBusMessage: cloneServiceBusMessage(m.ServiceBusMessage), QueueName: m.QueueName}
	}
	if m := a.ServiceBusTopicMessage; m != nil {
		c.ServiceBusTopicMessage = &ServiceBusTopicMessage{ServiceBusMessage: cloneServiceBusMessage(m.ServiceBusMessage), TopicPath: m.TopicPath}
	}
	if p := a.RetryPolicy; p != nil {
		rp := *p
		rp.RetryCount = clonePtr(p.RetryCount)
		c.RetryPolicy = &rp
	}
	c.ErrorAction = cloneAction(a.ErrorAction)
	return &c
}

func cloneServiceBusMessage(m ServiceBusMessage) ServiceBusMessage {
	m.Authentication = clonePtr(m.Authentication)
	m.CustomMessageProperties = maps.Clone(m.CustomMessageProperties)
	if p := m.BrokeredMessageProperties; p != nil {
		bp := *p
		bp.ForcePersistence = clonePtr(p.ForcePersistence)
		bp.ScheduledEnqueueTimeUTC = clonePtr(p.ScheduledEnqueueTimeUTC)
		m.BrokeredMessageProperties = &bp
	}
	return m
}

package api

import (
	"net/http"
	"strings"

	"github.com/jobscheduler/scheduler/contracts"
)

// checkPathNames checks every name the path of a route holds (seg are its
// unescaped segments) against its rule, on every route and method, and
// answers 400 InvalidResourceName naming each bad one. The rules bound the
// names' lengths, and so every key and subject built from them; a name is
// never looked up before it passed.
func checkPathNames(pattern string, seg []string) *apiError {
	if pattern == routeAllCollections {
		return nil // it names nothing
	}
	errs := []error{contracts.ValidateSubscription(seg[1])}
	if pattern != routeSubscriptionCollections && pattern != routeSubscriptionUpcoming && pattern != routeSubscriptionExecutions {
		errs = append(errs, contracts.ValidateResourceGroup(seg[3]))
	}
	if len(seg) > 7 {
		errs = append(errs, contracts.ValidateName("job collection", seg[7]))
	}
	if len(seg) > 9 {
		kind := "job"
		if pattern == routeCalendar {
			kind = "calendar"
		}
		errs = append(errs, contracts.ValidateName(kind, seg[9]))
	}
	var msgs []string
	for _, err := range errs {
		if err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	if len(msgs) > 0 {
		return newError(http.StatusBadRequest, codeInvalidName, strings.Join(msgs, "; "))
	}
	return nil
}

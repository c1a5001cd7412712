package contracts

import (
	"fmt"
	"strings"
	"testing"
)

func oauthAction(tenant string) *JobAction {
	return with(validHTTP(), func(a *JobAction) {
		a.Request.Authentication = &HTTPAuthentication{Type: HTTPAuthActiveDirectoryOAuth, Tenant: tenant,
			Audience: "https://management.core.windows.net/", ClientID: "client", Secret: "secret"}
	})
}

// Regression: a tenant of ".." sent the token request to
// <authority>/../oauth2/token, outside the authority's tenant paths.
func TestValidateActionTenant(t *testing.T) {
	t.Parallel()
	for _, tenant := range []string{"72f988bf-86f1-41af-91ab-2d7cd011db47", "72F988BF-86F1-41AF-91AB-2D7CD011DB47",
		"contoso.onmicrosoft.com", "contoso.com", "common", "my-tenant.example"} {
		var errs FieldErrors
		ValidateAction(oauthAction(tenant), "properties.action", false, &errs)
		assertErrorList(t, errs, nil)
	}
	const rule = `must be a tenant id (a GUID such as 72f988bf-86f1-41af-91ab-2d7cd011db47) or a domain name such as contoso.onmicrosoft.com`
	for _, tenant := range []string{"..", ".", "../common", "a/b", "contoso.com/", "%2e%2e", "con toso", "-contoso.com", "contoso-.com",
		"contoso..com", ".contoso.com", "contoso.com.", "a?b", "a#b", "tenant_1", strings.Repeat("a", 64)} {
		var errs FieldErrors
		ValidateAction(oauthAction(tenant), "properties.action", false, &errs)
		assertErrorList(t, errs, []string{fmt.Sprintf("properties.action.request.authentication.tenant: %q ", tenant) + rule})
	}
}

func TestValidateActionServiceBusNamespace(t *testing.T) {
	t.Parallel()
	for _, ns := range []string{"mynamespace", "my-namespace", "Orders-Prod-2", "abcdef", "a" + strings.Repeat("b", 49)} {
		var errs FieldErrors
		a := with(validServiceBusQueue(), func(a *JobAction) { a.ServiceBusQueueMessage.Namespace = ns })
		ValidateAction(a, "properties.action", false, &errs)
		assertErrorList(t, errs, nil)
	}
	const rule = ` must be a namespace name: 6 to 50 letters, digits and hyphens, starting with a letter and not ending with a hyphen; ` +
		`a host name or port cannot be given here (the worker's --service-bus-endpoint says where namespaces are reached)`
	for _, ns := range []string{"127.0.0.1:25990", "localhost:25990", "[::1]:5672", "myns.servicebus.windows.net",
		"short", "1namespace", "namespace-", "name_space", "a" + strings.Repeat("b", 50), "my ns-1", "ns;SharedAccessKey=x"} {
		// Checked on topics as well as queues.
		for _, a := range []*JobAction{
			with(validServiceBusQueue(), func(a *JobAction) { a.ServiceBusQueueMessage.Namespace = ns }),
			with(validServiceBusTopic(), func(a *JobAction) { a.ServiceBusTopicMessage.Namespace = ns }),
		} {
			var errs FieldErrors
			ValidateAction(a, "properties.action", false, &errs)
			payload := payloadName(a.Type)
			assertErrorList(t, errs, []string{fmt.Sprintf("properties.action.%s.namespace: %q", payload, ns) + rule})
		}
	}
}

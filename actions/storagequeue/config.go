package storagequeue

import (
	"cmp"
	"crypto/x509"
	"fmt"
	"github.com/jobscheduler/scheduler/actions/netpolicy"
	"net/url"
	"strings"
	"time"
)

// AccountPlaceholder is the part of Config.EndpointTemplate replaced by the
// action's storage account name.
const AccountPlaceholder = "{account}"

// DefaultEndpointTemplate is the queue service of an Azure storage account.
const DefaultEndpointTemplate = "https://" + AccountPlaceholder + ".queue.core.windows.net"

// DefaultRegion is the region name written in the envelope when the
// configuration names none: a deployment of this scheduler is not an Azure
// region, so it says "Local" unless the operator names one.
const DefaultRegion = "Local"

// Config configures a Sender. The zero value sends to Azure Storage.
type Config struct {
	// EndpointTemplate is the queue service URL of a storage account, with
	// AccountPlaceholder ("{account}") where the account name goes: in the
	// host for Azure, in the path for Azurite's path style
	// (http://127.0.0.1:10001/{account}). It must be an absolute http or
	// https URL without a query or fragment. Defaults to
	// DefaultEndpointTemplate, https://{account}.queue.core.windows.net.
	EndpointTemplate string
	// Region is the display name written in the envelope's Region element,
	// where the original service wrote the Azure region running the job
	// ("Central US"). Defaults to DefaultRegion, "Local".
	Region string
	// Timeout bounds each send; the attempt's context may end it sooner.
	// Defaults to 60s, the original service's fixed request timeout.
	Timeout time.Duration
	// MaxClients is how many queue clients (one per queue URL and SAS
	// token) are kept for reuse; past it, the least recently used is
	// dropped. Defaults to 1024.
	MaxClients int
	// MaxIdleConnsPerHost is how many idle connections to one storage
	// account the transport keeps for reuse. Defaults to 256.
	MaxIdleConnsPerHost int
	// RootCAs are the authorities trusted for the storage service's
	// certificate. Defaults to the system roots.
	RootCAs *x509.CertPool
	// AllowLoopback lets sends reach a queue service on a loopback
	// address, such as Azurite on 127.0.0.1. Defaults to false: every
	// connection goes through the address policy of package netpolicy.
	AllowLoopback bool
	// AllowPrivate lets sends reach a queue service on a private address.
	// Defaults to false.
	AllowPrivate bool
	// Resolver looks up the queue service's host names. Defaults to
	// net.DefaultResolver.
	Resolver netpolicy.Resolver
}

func (c Config) withDefaults() Config {
	c.EndpointTemplate = cmp.Or(c.EndpointTemplate, DefaultEndpointTemplate)
	c.Region = cmp.Or(c.Region, DefaultRegion)
	c.Timeout = cmp.Or(c.Timeout, 60*time.Second)
	c.MaxClients = cmp.Or(c.MaxClients, 1024)
	c.MaxIdleConnsPerHost = cmp.Or(c.MaxIdleConnsPerHost, 256)
	return c
}

func (c Config) validate() error {
	if err := validateTemplate(c.EndpointTemplate); err != nil {
		return fmt.Errorf("storagequeue: Config.EndpointTemplate %q %w", c.EndpointTemplate, err)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("storagequeue: Config.Timeout %s is negative", c.Timeout)
	}
	if c.MaxClients < 0 {
		return fmt.Errorf("storagequeue: Config.MaxClients %d is negative", c.MaxClients)
	}
	if c.MaxIdleConnsPerHost < 0 {
		return fmt.Errorf("storagequeue: Config.MaxIdleConnsPerHost %d is negative", c.MaxIdleConnsPerHost)
	}
	return nil
}

// validateTemplate checks an endpoint template with a sample account name
// in place of the placeholder. Its error completes a sentence that starts
// with the field's name and value.
func validateTemplate(template string) error {
	if !strings.Contains(template, AccountPlaceholder) {
		return fmt.Errorf("has no %s placeholder for the storage account name", AccountPlaceholder)
	}
	u, err := url.Parse(strings.ReplaceAll(template, AccountPlaceholder, "account"))
	switch {
	case err != nil:
		return fmt.Errorf("is not a URL: %w", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("is not an http or https URL such as %s", DefaultEndpointTemplate)
	case u.Host == "":
		return fmt.Errorf("has no host")
	case u.User != nil:
		return fmt.Errorf("has user information; the SAS token authenticates")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return fmt.Errorf("has a query or fragment")
	}
	return nil
}

// accountEndpoint returns the queue service URL of a storage account, with
// no trailing slash.
func (c Config) accountEndpoint(account string) string {
	return strings.TrimRight(strings.ReplaceAll(c.EndpointTemplate, AccountPlaceholder, account), "/")
}

package storagequeue

import (
	"strings"
	"testing"
	"time"
)

func TestConfig(t *testing.T) {
	t.Parallel()

	t.Run("fills in the defaults", func(t *testing.T) {
		t.Parallel()
		c := Config{}.withDefaults()
		if c.EndpointTemplate != "https://{account}.queue.core.windows.net" || c.Region != "Local" ||
			c.Timeout != 60*time.Second || c.MaxClients != 1024 || c.MaxIdleConnsPerHost != 256 {
			t.Errorf("defaults = %+v", c)
		}
		if err := c.validate(); err != nil {
			t.Errorf("the defaults do not validate: %v", err)
		}
	})

	t.Run("keeps what is set", func(t *testing.T) {
		t.Parallel()
		in := Config{EndpointTemplate: "http://127.0.0.1:10001/{account}", Region: "West Europe", Timeout: time.Second, MaxClients: 2, MaxIdleConnsPerHost: 3}
		if got := in.withDefaults(); got != in {
			t.Errorf("withDefaults() = %+v, want %+v", got, in)
		}
	})

	t.Run("accepts host and path style templates", func(t *testing.T) {
		t.Parallel()
		for _, template := range []string{
			"https://{account}.queue.core.windows.net",
			"https://{account}.queue.core.windows.net/",
			"http://127.0.0.1:10001/{account}",
			"http://azurite:10001/{account}/",
			"https://{account}.queue.core.chinacloudapi.cn",
			"http://[::1]:10001/{account}",
		} {
			if _, err := New(Config{EndpointTemplate: template}); err != nil {
				t.Errorf("New with EndpointTemplate %q: %v", template, err)
			}
		}
	})

	t.Run("rejects an EndpointTemplate that cannot name a queue service, naming the field", func(t *testing.T) {
		t.Parallel()
		for template, why := range map[string]string{
			"https://myaccount.queue.core.windows.net": "has no {account} placeholder",
			"ftp://{account}.example.com":              "is not an http or https URL",
			"{account}.queue.core.windows.net":         "is not an http or https URL",
			"https:///{account}":                       "has no host",
			"https://user:pw@{account}.example.com":    "has user information",
			"https://{account}.example.com/?x=1":       "has a query or fragment",
			"https://{account}.example.com/#frag":      "has a query or fragment",
			"http://127.0.0.1:{account}":               "is not a URL",
			"http://127.0.0.1:10001/{account}\x7f":     "is not a URL",
		} {
			_, err := New(Config{EndpointTemplate: template})
			if err == nil {
				t.Errorf("New accepted EndpointTemplate %q", template)
				continue
			}
			if !strings.Contains(err.Error(), "Config.EndpointTemplate") || !strings.Contains(err.Error(), why) {
				t.Errorf("EndpointTemplate %q: error %q does not name the field and say %q", template, err, why)
			}
		}
	})

	t.Run("rejects negative numbers, naming the field", func(t *testing.T) {
		t.Parallel()
		for field, c := range map[string]Config{
			"Config.Timeout":             {Timeout: -time.Second},
			"Config.MaxClients":          {MaxClients: -1},
			"Config.MaxIdleConnsPerHost": {MaxIdleConnsPerHost: -1},
		} {
			if _, err := New(c); err == nil || !strings.Contains(err.Error(), field) {
				t.Errorf("New(%+v) = %v, want an error naming %s", c, err, field)
			}
		}
	})

	t.Run("puts the account in the template, without a trailing slash", func(t *testing.T) {
		t.Parallel()
		for template, want := range map[string]string{
			"https://{account}.queue.core.windows.net":  "https://acct1.queue.core.windows.net",
			"https://{account}.queue.core.windows.net/": "https://acct1.queue.core.windows.net",
			"http://127.0.0.1:10001/{account}":          "http://127.0.0.1:10001/acct1",
			"http://127.0.0.1:10001/{account}/":         "http://127.0.0.1:10001/acct1",
		} {
			if got := (Config{EndpointTemplate: template}).accountEndpoint("acct1"); got != want {
				t.Errorf("accountEndpoint with %q = %q, want %q", template, got, want)
			}
		}
	})
}

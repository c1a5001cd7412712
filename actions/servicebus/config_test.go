package servicebus

import (
	"strings"
	"testing"
	"time"
)

func TestNewRejectsConfigurationsThatCannotWork(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"an endpoint template that is not sb://", Config{EndpointTemplate: "https://{namespace}.servicebus.windows.net/"}, "Config.EndpointTemplate"},
		{"an endpoint template without a host", Config{EndpointTemplate: "sb:///{namespace}"}, "Config.EndpointTemplate"},
		{"an endpoint template with a path", Config{EndpointTemplate: "sb://{namespace}.example.com/queues/"}, "Config.EndpointTemplate"},
		{"an endpoint template with a semicolon", Config{EndpointTemplate: "sb://{namespace}.example.com;SharedAccessKey=x"}, "Config.EndpointTemplate"},
		{"a negative timeout", Config{Timeout: -time.Second}, "Config.Timeout"},
		{"a negative sender bound", Config{MaxSenders: -1}, "Config.MaxSenders"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := New(tt.cfg)
			if err == nil {
				s.Close()
				t.Fatalf("New(%+v) succeeded, want an error naming %s", tt.cfg, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New error = %q, want it to name %s", err, tt.want)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	c := Config{}.withDefaults()
	if c.EndpointTemplate != DefaultEndpointTemplate || c.Timeout != 60*time.Second || c.MaxSenders != 256 || c.Logger == nil || c.Emulator {
		t.Errorf("defaults = %+v", c)
	}
	if err := c.validate(); err != nil {
		t.Errorf("the defaults do not validate: %v", err)
	}
}

func TestEndpoint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		template, namespace, want string
	}{
		{"", "myns", "sb://myns.servicebus.windows.net/"},
		{"", "myns.servicebus.chinacloudapi.cn", "sb://myns.servicebus.chinacloudapi.cn/"},
		{"", "127.0.0.1:5672", "sb://127.0.0.1:5672/"},
		{"", "localhost:5672", "sb://localhost:5672/"},
		{"", "[::1]:5672", "sb://[::1]:5672/"},
		{DefaultEndpointTemplate, "myns.example.com", "sb://myns.example.com/"},
		{"sb://{namespace}.servicebus.usgovcloudapi.net/", "myns", "sb://myns.servicebus.usgovcloudapi.net/"},
		// A configured template applies to dotted namespaces too.
		{"sb://{namespace}.internal/", "a.b", "sb://a.b.internal/"},
		// A template without {namespace} sends every namespace to one host.
		{"sb://localhost:5672", "anything", "sb://localhost:5672"},
	}
	for _, tt := range tests {
		c := Config{EndpointTemplate: tt.template}.withDefaults()
		got, err := c.endpoint(tt.namespace)
		if err != nil || got != tt.want {
			t.Errorf("endpoint(%q) with template %q = %q, %v; want %q", tt.namespace, tt.template, got, err, tt.want)
		}
	}
}

func TestEndpointRefusesNamespacesThatAreNoHostName(t *testing.T) {
	t.Parallel()
	c := Config{}.withDefaults()
	for _, namespace := range []string{"", "my ns", "ns;SharedAccessKey=x", "ns/path", "user@ns", "ns?x=1", "ns#f", "ñs"} {
		if got, err := c.endpoint(namespace); err == nil {
			t.Errorf("endpoint(%q) = %q, want an error", namespace, got)
		}
	}
}

package contracts

import (
	"reflect"
	"testing"
)

func TestDecodeJobCollection(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		in   string
		want JobCollectionDefinition
	}{
		{
			name: "the recorded collection is read",
			in: `{"name":"jc","location":"South Central US","tags":{"env":"test"},"properties":{"sku":{"name":"P20Premium"},"state":"Enabled",
				"quota":{"maxJobCount":50,"maxRecurrence":{"frequency":"Day","interval":2}}}}`,
			want: JobCollectionDefinition{
				Location: "South Central US",
				Tags:     map[string]string{"env": "test"},
				Properties: &JobCollectionProperties{
					Sku:   &Sku{Name: SkuP20Premium},
					State: JobCollectionStateEnabled,
					Quota: &JobCollectionQuota{MaxJobCount: ptr(50), MaxRecurrence: &JobMaxRecurrence{Frequency: FrequencyDay, Interval: ptr(2)}},
				},
			},
		},
		{
			name: "names and values match in any case and id, type and name are ignored",
			in: `{"ID":"/x","Type":"t","Name":"n","LOCATION":"west europe","Properties":{"SKU":{"Name":"free"},"State":"suspended",
				"Quota":{"MaxJobOccurrence":7,"maxrecurrence":{"FREQUENCY":"hour"}}}}`,
			want: JobCollectionDefinition{
				Location: "west europe",
				Properties: &JobCollectionProperties{
					Sku:   &Sku{Name: SkuFree},
					State: JobCollectionStateSuspended,
					Quota: &JobCollectionQuota{MaxJobOccurrence: ptr(7), MaxRecurrence: &JobMaxRecurrence{Frequency: FrequencyHour}},
				},
			},
		},
		{
			name: "an empty envelope is an empty collection",
			in:   `{}`,
			want: JobCollectionDefinition{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, errs := DecodeJobCollection([]byte(tt.in))
			if len(errs) > 0 {
				t.Fatalf("DecodeJobCollection: unexpected errors:\n%v", errs)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("DecodeJobCollection =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestDecodeJobCollectionReportsEveryProblem(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		in   string
		want []string
	}{
		{
			name: "invalid JSON is one error",
			in:   `{"location":`,
			want: []string{"invalid JSON at byte 12: unexpected end of JSON input"},
		},
		{
			name: "a top level that is not an object is an error",
			in:   `"jc"`,
			want: []string{"the body must be a JSON object"},
		},
		{
			name: "every problem is reported with its path",
			in: `{"location":5,"tags":{"a":[],"A":"x"},"properties":{"sku":{"name":"Gold"},"state":"Paused",
				"quota":{"maxJobCount":"50","maxJobOccurrence":1.5,"maxRecurrence":{"frequency":"Fortnight","interval":1e10}}}}`,
			want: []string{
				"location: must be a string",
				"tags.a: must be a string",
				"tags.A: given more than once (names are case-insensitive)",
				`properties.sku.name: "Gold" is not one of Standard, Free, P10Premium or P20Premium`,
				`properties.state: "Paused" is not one of Enabled, Disabled, Suspended or Deleted`,
				"properties.quota.maxJobCount: must be an integer",
				"properties.quota.maxJobOccurrence: must be an integer",
				`properties.quota.maxRecurrence.frequency: "Fortnight" is not one of Minute, Hour, Day, Week, Month or Year`,
				"properties.quota.maxRecurrence.interval: must be an integer between -2147483648 and 2147483647",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, errs := DecodeJobCollection([]byte(tt.in))
			assertErrorList(t, errs, tt.want)
		})
	}
}

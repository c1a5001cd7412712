package contracts

// DecodeJobCollection reads a job collection in its ARM envelope, as
// forgivingly as DecodeJob reads a job: property names and enum values in any
// case, every problem reported with its JSON path. It reads location, tags
// and properties (sku, state, quota); id, type and name are ignored, since
// the request path names the collection.
func DecodeJobCollection(data []byte) (JobCollectionDefinition, FieldErrors) {
	rep := &report{}
	top, ok := readDocument(data, rep)
	if !ok {
		return JobCollectionDefinition{}, rep.result()
	}
	c := JobCollectionDefinition{
		Location: top.str("location"),
		// ARM tag names are case-insensitive.
		Tags:       top.get("tags").stringMap(true),
		Properties: readJobCollectionProperties(top.get("properties")),
	}
	return c, rep.result()
}

func readJobCollectionProperties(f field) *JobCollectionProperties {
	o, ok := f.object()
	if !ok {
		return nil
	}
	return &JobCollectionProperties{
		Sku:   readSku(o.get("sku")),
		State: enumValue(o.get("state"), JobCollectionStates),
		Quota: readQuota(o.get("quota")),
	}
}

func readSku(f field) *Sku {
	o, ok := f.object()
	if !ok {
		return nil
	}
	return &Sku{Name: enumValue(o.get("name"), SkuNames)}
}

func readQuota(f field) *JobCollectionQuota {
	o, ok := f.object()
	if !ok {
		return nil
	}
	return &JobCollectionQuota{
		MaxJobCount:      o.get("maxJobCount").integer(),
		MaxJobOccurrence: o.get("maxJobOccurrence").integer(),
		MaxRecurrence:    readMaxRecurrence(o.get("maxRecurrence")),
	}
}

func readMaxRecurrence(f field) *JobMaxRecurrence {
	o, ok := f.object()
	if !ok {
		return nil
	}
	return &JobMaxRecurrence{
		Frequency: enumValue(o.get("frequency"), Frequencies),
		Interval:  o.get("interval").integer(),
	}
}

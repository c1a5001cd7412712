package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
)

// mergePatch applies a JSON merge patch (RFC 7386) to base, matching property
// names case-insensitively as the rest of the input does: an object merges
// into an object, null removes a property, anything else replaces it.
//
// With unwrap set, base is a job's bare properties and the patch may be the
// ARM envelope {"properties": {...}} or the bare properties; enveloped tells
// which, so error paths can say "properties.…".
func mergePatch(base any, patch []byte, unwrap bool) (merged []byte, e *apiError) {
	merged, _, e = mergePatchEnvelope(base, patch, unwrap)
	return merged, e
}

func mergePatchEnvelope(base any, patch []byte, unwrap bool) (merged []byte, enveloped bool, e *apiError) {
	baseJSON, err := json.Marshal(base)
	if err != nil {
		return nil, false, newError(http.StatusInternalServerError, codeInternal, "encoding the stored resource: "+err.Error())
	}
	var target, p any
	if err := decodeNumbers(baseJSON, &target); err != nil {
		return nil, false, newError(http.StatusInternalServerError, codeInternal, "decoding the stored resource: "+err.Error())
	}
	if err := decodeNumbers(patch, &p); err != nil {
		return nil, false, newError(http.StatusBadRequest, codeBadRequest, "the patch is not valid JSON: "+err.Error())
	}
	po, ok := p.(map[string]any)
	if !ok {
		return nil, false, newError(http.StatusBadRequest, codeBadRequest, "the patch must be a JSON object")
	}
	if unwrap {
		if key, ok := findKey(po, "properties"); ok {
			inner, isObject := po[key].(map[string]any)
			if !isObject {
				return nil, true, newError(http.StatusBadRequest, codeBadRequest, "properties: must be an object")
			}
			po, enveloped = inner, true
		}
	}
	out, err := json.Marshal(mergeValue(target, po))
	if err != nil {
		return nil, enveloped, newError(http.StatusInternalServerError, codeInternal, "encoding the merged resource: "+err.Error())
	}
	return out, enveloped, nil
}

func decodeNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

func mergeValue(target, patch any) any {
	po, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	to, ok := target.(map[string]any)
	if !ok {
		to = map[string]any{}
	}
	for k, v := range po {
		key, found := findKey(to, k)
		if !found {
			key = k
		}
		if v == nil {
			delete(to, key)
			continue
		}
		to[key] = mergeValue(to[key], v)
	}
	return to
}

// findKey returns the key of m that equals name ignoring case.
func findKey(m map[string]any, name string) (string, bool) {
	if _, ok := m[name]; ok {
		return name, true
	}
	for k := range m {
		if strings.EqualFold(k, name) {
			return k, true
		}
	}
	return "", false
}

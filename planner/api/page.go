package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/jobscheduler/scheduler/contracts"
)

// page is a parsed $top and $skip, and the value of a $filter on one field.
type page struct {
	top, skip int
	hasTop    bool
	filter    string
}

// parseWindow reads $top (1–100) and $skip.
func parseWindow(q url.Values) (page, *apiError) {
	var p page
	if v := q.Get("$top"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return p, newError(http.StatusBadRequest, codeInvalidQuery, fmt.Sprintf("$top must be an integer from 1 to 100, not %s", contracts.QuoteName(v)))
		}
		p.top, p.hasTop = n, true
	}
	if v := q.Get("$skip"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return p, newError(http.StatusBadRequest, codeInvalidQuery, fmt.Sprintf("$skip must be an integer of 0 or more, not %s", contracts.QuoteName(v)))
		}
		p.skip = n
	}
	return p, nil
}

// parsePage reads $top, $skip and $filter; the filter may only be
// "<field> eq <one of values>" (any case, the value optionally quoted).
func parsePage[T ~string](q url.Values, field string, values []T) (page, *apiError) {
	p, e := parseWindow(q)
	if e != nil {
		return p, e
	}
	if v := q.Get("$filter"); v != "" {
		fields := strings.Fields(v)
		if len(fields) != 3 || !strings.EqualFold(fields[0], field) || !strings.EqualFold(fields[1], "eq") {
			return p, newError(http.StatusBadRequest, codeInvalidFilter, fmt.Sprintf("$filter %s is not supported; use %s eq %s (or %s)",
				contracts.QuoteName(v), field, values[0], contracts.EnumList(values[1:])))
		}
		value, ok := contracts.ParseEnum(strings.Trim(fields[2], `'"`), values)
		if !ok {
			return p, newError(http.StatusBadRequest, codeInvalidFilter, fmt.Sprintf("$filter: %s is not one of %s", contracts.QuoteName(fields[2]), contracts.EnumList(values)))
		}
		p.filter = string(value)
	}
	return p, nil
}

// window returns the part of a list of total items that p asks for.
func (p page) window(total int) (from, to int) {
	from = min(p.skip, total)
	to = total
	if p.hasTop {
		to = min(from+p.top, total)
	}
	return from, to
}

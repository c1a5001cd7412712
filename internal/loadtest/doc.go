// Package loadtest measures a running scheduler from outside: it plans a
// load of HTTP jobs (all due at one instant, or a steady number each
// second), receives their calls in a sink that notes when each arrived,
// and turns the arrivals into figures: how late the calls came after their
// due time (percentiles and a histogram), how many came early, were lost
// or came twice. `scheduler bench` and the project's benchmarks share it.
package loadtest

package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/jobscheduler/scheduler/planner/service"
)

// Environment variables of the planner's access flags.
const (
	envAPITokensFile   = "SCHEDULER_API_TOKENS_FILE"
	envOIDCIssuer      = "SCHEDULER_OIDC_ISSUER"
	envOIDCAudience    = "SCHEDULER_OIDC_AUDIENCE"
	envOIDCScopesClaim = "SCHEDULER_OIDC_SCOPES_CLAIM"
	envMaxJobs         = "SCHEDULER_MAX_JOBS_PER_COLLECTION"
	envMinRecurrence   = "SCHEDULER_MIN_RECURRENCE_INTERVAL"
	envMaxCollections  = "SCHEDULER_MAX_COLLECTIONS_PER_SUBSCRIPTION"
	envIntake          = "SCHEDULER_INTAKE"
	envConsole         = "SCHEDULER_CONSOLE"
)

// accessFlags adds the planner's flags of who may do what through the API
// and the NATS intake, into cfg and vars. The function it returns sets
// what the flags do not set directly, once they are parsed.
func accessFlags(flags *pflag.FlagSet, vars map[string]string, cfg *service.Config) (parsed func()) {
	flags.StringVar(&cfg.TokensFile, "api-tokens-file", "", "YAML file of scoped bearer tokens (name, sha256, role, scopes), read again when it changes")
	flags.StringVar(&cfg.OIDC.Issuer, "oidc-issuer", "", "OpenID Connect issuer URL whose tokens the API accepts")
	flags.StringVar(&cfg.OIDC.Audience, "oidc-audience", "", "audience (aud) the OpenID Connect tokens must hold")
	flags.StringVar(&cfg.OIDC.ScopesClaim, "oidc-scopes-claim", "scheduler_scopes", "claim of the OpenID Connect tokens holding their grants, each role:scope")
	flags.IntVar(&cfg.Ceilings.MaxJobsPerCollection, "max-jobs-per-collection", 1000, "highest job count a quota or plan may allow, unless set by an operator")
	flags.DurationVar(&cfg.Ceilings.MinRecurrence, "min-recurrence-interval", time.Minute, "shortest quota.maxRecurrence a collection may have, unless set by an operator")
	flags.IntVar(&cfg.Ceilings.MaxCollectionsPerSubscription, "max-collections-per-subscription", 100, "most job collections a subscription may hold for a non-operator to create another")
	intake := flags.Bool("intake", true, "take job definitions from NATS (scheduler.api.jobs.>, the INTAKE stream)")
	consoleOn := flags.Bool("console", true, "serve the web console at / beside the API")
	for flag, name := range map[string]string{
		"api-tokens-file": envAPITokensFile, "oidc-issuer": envOIDCIssuer, "oidc-audience": envOIDCAudience,
		"oidc-scopes-claim": envOIDCScopesClaim, "max-jobs-per-collection": envMaxJobs,
		"min-recurrence-interval": envMinRecurrence, "max-collections-per-subscription": envMaxCollections, "intake": envIntake, "console": envConsole,
	} {
		vars[flag] = name
	}
	return func() { cfg.DisableIntake, cfg.DisableConsole = !*intake, !*consoleOn }
}

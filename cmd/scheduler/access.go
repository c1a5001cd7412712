package main

import (
	"fmt"
	"net/url"
	"os"
	"strings"
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
	envOIDCClientID    = "SCHEDULER_OIDC_CLIENT_ID"
	envOIDCSecretFile  = "SCHEDULER_OIDC_CLIENT_SECRET_FILE"
	envOIDCSecret      = "SCHEDULER_OIDC_CLIENT_SECRET" // the secret itself, in place of the file
	envOIDCLoginScopes = "SCHEDULER_OIDC_LOGIN_SCOPES"
	envOIDCLoginParams = "SCHEDULER_OIDC_LOGIN_PARAMS"
	envMaxJobs         = "SCHEDULER_MAX_JOBS_PER_COLLECTION"
	envMinRecurrence   = "SCHEDULER_MIN_RECURRENCE_INTERVAL"
	envMaxCollections  = "SCHEDULER_MAX_COLLECTIONS_PER_SUBSCRIPTION"
	envIntake          = "SCHEDULER_INTAKE"
	envConsole         = "SCHEDULER_CONSOLE"
)

// accessFlags adds the planner's flags of who may do what through the API
// and the NATS intake, into cfg and vars. The function it returns sets
// what the flags do not set directly, once they are parsed, and reads the
// console's OpenID Connect client secret.
func accessFlags(flags *pflag.FlagSet, vars map[string]string, cfg *service.Config) (parsed func() error) {
	flags.StringVar(&cfg.TokensFile, "api-tokens-file", "", "YAML file of scoped bearer tokens (name, sha256, role, scopes), read again when it changes")
	flags.StringVar(&cfg.OIDC.Issuer, "oidc-issuer", "", "OpenID Connect issuer URL whose tokens the API accepts")
	flags.StringVar(&cfg.OIDC.Audience, "oidc-audience", "", "audience (aud) the OpenID Connect tokens must hold")
	flags.StringVar(&cfg.OIDC.ScopesClaim, "oidc-scopes-claim", "scheduler_scopes", "claim of the OpenID Connect tokens holding their grants, each role:scope")
	flags.StringVar(&cfg.OIDCClient.ID, "oidc-client-id", "", "client id the console signs viewers in with through --oidc-issuer (authorization code with PKCE)")
	secretFile := flags.String("oidc-client-secret-file", "", "file holding the secret of --oidc-client-id (or the secret itself in "+envOIDCSecret+"); none for a public client")
	loginScopes := flags.String("oidc-login-scopes", "openid profile", "space-separated scopes the console's sign-in asks the provider for")
	loginParams := flags.StringToString("oidc-login-params", nil, "key=value pairs added to the console's authorization request, such as audience=<the API's audience>")
	flags.IntVar(&cfg.Ceilings.MaxJobsPerCollection, "max-jobs-per-collection", 1000, "highest job count a quota or plan may allow, unless set by an operator")
	flags.DurationVar(&cfg.Ceilings.MinRecurrence, "min-recurrence-interval", time.Minute, "shortest quota.maxRecurrence a collection may have, unless set by an operator")
	flags.IntVar(&cfg.Ceilings.MaxCollectionsPerSubscription, "max-collections-per-subscription", 100, "most job collections a subscription may hold for a non-operator to create another")
	intake := flags.Bool("intake", true, "take job definitions from NATS (scheduler.api.jobs.>, the INTAKE stream)")
	consoleOn := flags.Bool("console", true, "serve the web console at / beside the API")
	for flag, name := range map[string]string{
		"api-tokens-file": envAPITokensFile, "oidc-issuer": envOIDCIssuer, "oidc-audience": envOIDCAudience,
		"oidc-scopes-claim": envOIDCScopesClaim, "oidc-client-id": envOIDCClientID, "oidc-client-secret-file": envOIDCSecretFile,
		"oidc-login-scopes": envOIDCLoginScopes, "oidc-login-params": envOIDCLoginParams, "max-jobs-per-collection": envMaxJobs,
		"min-recurrence-interval": envMinRecurrence, "max-collections-per-subscription": envMaxCollections, "intake": envIntake, "console": envConsole,
	} {
		vars[flag] = name
	}
	return func() error {
		cfg.DisableIntake, cfg.DisableConsole = !*intake, !*consoleOn
		cfg.OIDCClient.Scopes = strings.Fields(*loginScopes)
		for k, v := range *loginParams {
			if cfg.OIDCClient.Params == nil {
				cfg.OIDCClient.Params = url.Values{}
			}
			cfg.OIDCClient.Params.Set(k, v)
		}
		secret, err := clientSecret(*secretFile)
		cfg.OIDCClient.Secret = secret
		return err
	}
}

// clientSecret reads the console's OpenID Connect client secret from file,
// or from its environment variable when no file is named. The error never
// holds the secret.
func clientSecret(file string) (string, error) {
	if file == "" {
		return strings.TrimSpace(os.Getenv(envOIDCSecret)), nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", &exitError{code: 1, err: fmt.Errorf("--oidc-client-secret-file (%s): %w", envOIDCSecretFile, err)}
	}
	secret := strings.TrimSpace(string(data))
	if secret == "" {
		return "", &exitError{code: 1, err: fmt.Errorf("--oidc-client-secret-file (%s): %s holds no secret", envOIDCSecretFile, file)}
	}
	return secret, nil
}

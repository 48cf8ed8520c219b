package admincli

import (
	"context"
	"flag"
	"io"
	"os"
	"strings"
	"time"

	"github.com/myriarch/myriarch/internal/adminapi"
	"github.com/myriarch/myriarch/internal/adminclient"
)

// CompleteTimeout bounds what completion asks of the server, as a shell
// waits for it; MYRIARCH_COMPLETE_TIMEOUT (a duration) replaces it.
const CompleteTimeout = 3 * time.Second

func completeTimeout() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("MYRIARCH_COMPLETE_TIMEOUT")); err == nil && d > 0 {
		return d
	}
	return CompleteTimeout
}

// fixed are the candidates of arguments and flag values that need no
// server.
var fixed = map[string][]string{
	"shell":        {"bash", "zsh", "fish"},
	"flag:output":  {FormatTable, FormatJSON, FormatYAML},
	"flag:o":       {FormatTable, FormatJSON, FormatYAML},
	"flag:role":    {"viewer", "operator", "admin"},
	"flag:kind":    {"collector", "updater", "bridge", "unknown"},
	"flag:outcome": {"ok", "denied", "error"},
}

// Lookup completes an argument of a kind (cmdline.Lookup): agents' UIDs,
// fleets', users' and webhooks' names, tokens' and API keys' ids, asked
// of the server the words before name (their --admin, --config,
// --data-dir, --admin-token-file, or the environment), within
// CompleteTimeout; nothing when it does not answer in time.
func (c *Commands) Lookup(kind string, words []string) []string {
	if f, ok := fixed[kind]; ok {
		return f
	}
	ask, ok := map[string]func(context.Context, *adminclient.Client) ([]string, error){
		"agent":      agentUIDs,
		"fleet":      fleetNames,
		"flag:fleet": fleetNames,
		"token":      tokenIDs,
		"user":       userNames,
		"apikey":     apikeyIDs,
	}[kind]
	if !ok {
		return nil
	}
	fs := flag.NewFlagSet("complete", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	client := c.Connect(fs)
	_ = fs.Parse(connectionFlags(fs, words))
	cl, err := client()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), completeTimeout())
	defer cancel()
	list, err := ask(ctx, cl)
	if err != nil {
		return nil
	}
	return list
}

// connectionFlags picks from words the flags fs knows, with their values.
func connectionFlags(fs *flag.FlagSet, words []string) []string {
	var out []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		if !strings.HasPrefix(w, "-") {
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
		if fs.Lookup(name) == nil {
			continue
		}
		out = append(out, w)
		if !hasValue && i+1 < len(words) {
			out = append(out, words[i+1])
			i++
		}
	}
	return out
}

// completedAgents bounds the UIDs completion offers: a large estate's
// first ones (by UID), not all of them.
const completedAgents = 1000

func agentUIDs(ctx context.Context, cl *adminclient.Client) ([]string, error) {
	limit := completedAgents
	r, err := cl.API.ListAgentsWithResponse(ctx, &adminapi.ListAgentsParams{Limit: &limit})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(r.JSON200.Agents))
	for _, a := range r.JSON200.Agents {
		out = append(out, a.InstanceUid.String())
	}
	return out, nil
}

func fleetNames(ctx context.Context, cl *adminclient.Client) ([]string, error) {
	r, err := cl.API.ListFleetsWithResponse(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(r.JSON200.Fleets))
	for _, f := range r.JSON200.Fleets {
		out = append(out, f.Name)
	}
	return out, nil
}

func tokenIDs(ctx context.Context, cl *adminclient.Client) ([]string, error) {
	r, err := cl.API.ListTokensWithResponse(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range r.JSON200.Tokens {
		if t.RevokedAt == nil {
			out = append(out, t.Id)
		}
	}
	return out, nil
}

func userNames(ctx context.Context, cl *adminclient.Client) ([]string, error) {
	r, err := cl.API.ListUsersWithResponse(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, u := range r.JSON200.Users {
		out = append(out, u.Name)
	}
	return out, nil
}

func apikeyIDs(ctx context.Context, cl *adminclient.Client) ([]string, error) {
	r, err := cl.API.ListAPIKeysWithResponse(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, k := range r.JSON200.Apikeys {
		if k.RevokedAt == nil {
			out = append(out, k.Id)
		}
	}
	return out, nil
}

package providers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"slices"
	"time"

	"github.com/myriarch/myriarch/internal/vars"
)

// Options tunes a Manager; zero fields take the defaults.
type Options struct {
	// Debounce is how long changes are collected before one snapshot is
	// published (default 100ms).
	Debounce time.Duration
	// BackoffInitial and BackoffMax bound the wait before a failed provider
	// is restarted; the wait doubles per consecutive failure (defaults 1s
	// and 30s). A provider that ran for BackoffMax before failing starts
	// again from BackoffInitial.
	BackoffInitial, BackoffMax time.Duration
	// InitialWait caps how long the first snapshot waits for every provider
	// to report once (default 5s); after it, the snapshot is published with
	// what has been reported.
	InitialWait time.Duration
	// HostRefresh is how often the host provider re-reads host facts
	// (default 5m).
	HostRefresh time.Duration
	// DockerRetry is how often the docker provider looks for an absent
	// engine (default 10s).
	DockerRetry time.Duration
	// AgentID is the agent provider's id.
	AgentID string

	// after replaces time.After in tests of the debounce.
	after func(time.Duration) <-chan time.Time
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.Debounce, 100*time.Millisecond)
	def(&o.BackoffInitial, time.Second)
	def(&o.BackoffMax, 30*time.Second)
	def(&o.InitialWait, 5*time.Second)
	def(&o.HostRefresh, 5*time.Minute)
	def(&o.DockerRetry, 10*time.Second)
	if o.after == nil {
		o.after = time.After
	}
	return o
}

// Manager runs providers and publishes complete snapshots of their data.
type Manager struct {
	log     *slog.Logger
	opts    Options
	context []ContextProvider
	dynamic []dynamicEntry
}

type dynamicEntry struct {
	p        DynamicProvider
	priority int
}

// NewManager returns a Manager for explicit providers; New builds one from
// configuration.
func NewManager(log *slog.Logger, opts Options) *Manager {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{log: log, opts: opts.withDefaults()}
}

// AddContext registers a context provider.
func (m *Manager) AddContext(p ContextProvider) { m.context = append(m.context, p) }

// AddDynamic registers a dynamic provider with the priority of its mappings.
func (m *Manager) AddDynamic(p DynamicProvider, priority int) {
	m.dynamic = append(m.dynamic, dynamicEntry{p: p, priority: priority})
}

// update is one provider's new data.
type update struct {
	name     string
	context  map[string]any
	mappings []vars.Mapping
	dynamic  bool
}

// Run runs every provider until ctx ends and calls publish (from a single
// goroutine) with each new complete snapshot: first once every provider has
// reported (or InitialWait passed), then after each debounced burst of
// changes. It returns nil when ctx ends.
func (m *Manager) Run(ctx context.Context, publish func(Snapshot)) error {
	if len(m.context)+len(m.dynamic) == 0 {
		publish(Snapshot{Context: map[string]any{}, Mappings: []vars.Mapping{}})
		<-ctx.Done()
		return nil
	}
	names := map[string]bool{}
	for _, p := range m.context {
		if names[p.Name()] {
			return fmt.Errorf("providers: two providers named %q", p.Name())
		}
		names[p.Name()] = true
	}
	priority := map[string]int{}
	for _, d := range m.dynamic {
		if names[d.p.Name()] {
			return fmt.Errorf("providers: two providers named %q", d.p.Name())
		}
		names[d.p.Name()] = true
		priority[d.p.Name()] = d.priority
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	updates := make(chan update)
	done := make(chan struct{})
	running := 0
	start := func(name string, run func(context.Context) error) {
		running++
		go func() {
			defer func() { done <- struct{}{} }()
			m.supervise(ctx, name, run)
		}()
	}
	for _, p := range m.context {
		start(p.Name(), func(ctx context.Context) error {
			return p.Run(ctx, func(data map[string]any) {
				select {
				case updates <- update{name: p.Name(), context: maps.Clone(data)}:
				case <-ctx.Done():
				}
			})
		})
	}
	for _, d := range m.dynamic {
		start(d.p.Name(), func(ctx context.Context) error {
			return d.p.Run(ctx, func(ms []vars.Mapping) {
				select {
				case updates <- update{name: d.p.Name(), mappings: slices.Clone(ms), dynamic: true}:
				case <-ctx.Done():
				}
			})
		})
	}
	defer func() {
		cancel()
		for ; running > 0; running-- {
			<-done
		}
	}()

	contextData := map[string]map[string]any{}
	mappings := map[string][]vars.Mapping{}
	reported := map[string]bool{}
	snapshot := func() Snapshot {
		s := Snapshot{Context: make(map[string]any, len(contextData)), Mappings: []vars.Mapping{}}
		for name, d := range contextData {
			s.Context[name] = d
		}
		provs := slices.Collect(maps.Keys(mappings))
		slices.SortFunc(provs, func(a, b string) int {
			return cmp.Or(cmp.Compare(priority[a], priority[b]), cmp.Compare(a, b))
		})
		for _, p := range provs {
			for _, mp := range mappings[p] {
				mp.Provider, mp.Priority = p, priority[p]
				s.Mappings = append(s.Mappings, mp)
			}
		}
		return s
	}

	initial := m.opts.after(m.opts.InitialWait)
	var debounce <-chan time.Time
	published := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case u := <-updates:
			reported[u.name] = true
			if u.dynamic {
				mappings[u.name] = u.mappings
			} else {
				if u.context == nil {
					u.context = map[string]any{}
				}
				contextData[u.name] = u.context
			}
			if !published {
				if len(reported) == len(names) {
					publish(snapshot())
					published = true
				}
				continue
			}
			if debounce == nil {
				debounce = m.opts.after(m.opts.Debounce)
			}
		case <-initial:
			initial = nil
			if !published {
				m.log.Warn("providers: publishing before every provider reported", "waited", m.opts.InitialWait)
				publish(snapshot())
				published = true
			}
		case <-debounce:
			debounce = nil
			publish(snapshot())
		}
	}
}

// supervise runs one provider, restarting it with exponential backoff when
// it fails or panics.
func (m *Manager) supervise(ctx context.Context, name string, run func(context.Context) error) {
	delay := m.opts.BackoffInitial
	for {
		started := time.Now()
		err := safeRun(ctx, run)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("stopped without being asked to")
		}
		if time.Since(started) >= m.opts.BackoffMax {
			delay = m.opts.BackoffInitial
		}
		m.log.Warn("providers: provider failed; restarting", "provider", name, "error", err, "in", delay)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(delay*2, m.opts.BackoffMax)
	}
}

func safeRun(ctx context.Context, run func(context.Context) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	return run(ctx)
}

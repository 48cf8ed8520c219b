package updater

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/agent/config"
	"github.com/myriarch/myriarch/agent/hostinfo"
	"github.com/myriarch/myriarch/agent/identity"
	"github.com/myriarch/myriarch/agent/keyring"
	"github.com/myriarch/myriarch/agent/mode"
	"github.com/myriarch/myriarch/agent/modes"
	"github.com/myriarch/myriarch/agent/supervisorstate"
	"github.com/myriarch/myriarch/internal/buildinfo"
)

// ServiceName is the identifying service.name every updater reports; the
// server recognises updaters by it.
const ServiceName = "myriarch-updater"

// Attributes the updater reports besides the OpenTelemetry semantic ones
// (the collector mode adds its own: agent/mode).
const (
	AttrInstallMode           = "dev.myriarch.install.mode"
	AttrServerEndpoint        = "dev.myriarch.server.endpoint"
	AttrSupervisorService     = mode.AttrSupervisorService
	AttrCollectorInstanceUID  = "dev.myriarch.collector.instance_uid"
	AttrCollectorImageVersion = mode.AttrCollectorImageVersion
	AttrCollectorImageDigest  = mode.AttrCollectorImageDigest
)

// Capabilities is what the updater announces.
const Capabilities = protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus |
	protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages |
	protobufs.AgentCapabilities_AgentCapabilities_ReportsPackageStatuses |
	protobufs.AgentCapabilities_AgentCapabilities_ReportsHealth |
	protobufs.AgentCapabilities_AgentCapabilities_ReportsHeartbeat

// Description is the JSON view of the AgentDescription the updater reports
// (what `myriarch-updater inspect` prints).
type Description struct {
	InstanceUID    string            `json:"instanceUid"`
	Identifying    map[string]string `json:"identifying"`
	NonIdentifying map[string]string `json:"nonIdentifying"`
	Capabilities   []string          `json:"capabilities"`

	// Problems are the non-fatal issues met while describing (unreadable
	// supervisor state, a failed look-up of what runs); the updater reports them
	// as unhealthy. Not part of the JSON view.
	Problems []error `json:"-"`
}

// Describe computes, without connecting anywhere, the description the
// updater would report for cfg: its persisted instance UID (created if it
// does not exist yet, as `run` would), host attributes, the dev.myriarch.*
// attributes (the collector mode's among them) and the collector instance
// UID read from the supervisor state.
func Describe(cfg *config.Config) (*Description, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rt, err := modes.For(cfg, nil)
	if err != nil {
		return nil, err
	}
	uid, err := identity.LoadOrCreate(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	host, herr := hostinfo.Get(ctx)
	f := facts{host: host}
	var problems []error
	if herr != nil {
		problems = append(problems, herr)
	}
	if st, err := supervisorstate.Read(cfg.Supervisor.StorageDir); err == nil {
		f.collectorUID = st.InstanceID
	} else if !errors.Is(err, fs.ErrNotExist) {
		problems = append(problems, err)
	}
	if len(cfg.Trust.RootKeys) > 0 {
		r, err := keyring.Open(cfg.StateDir, cfg.Trust.RootKeys)
		if err != nil {
			return nil, err
		}
		f.keyring = r.Attributes()
	}
	if l, ok := rt.(mode.RunningLooker); ok {
		running, err := l.LookupRunning(ctx)
		if err != nil {
			problems = append(problems, err)
		}
		f.running = running
	}
	d := descriptionView(uid, buildDescription(cfg, rt, uid, f))
	d.Problems = problems
	return d, nil
}

// facts are the changing inputs of the description.
type facts struct {
	host         hostinfo.Info
	collectorUID string            // "" while unknown
	running      map[string]string // mode.RunningLooker's last look, nil while unknown
	keyring      map[string]string // keyring.Ring.Attributes, nil without trust.root_keys
}

func (f facts) equal(o facts) bool {
	return f.host == o.host && f.collectorUID == o.collectorUID && maps.Equal(f.running, o.running) && maps.Equal(f.keyring, o.keyring)
}

func buildDescription(cfg *config.Config, rt mode.Runtime, uid uuid.UUID, f facts) *protobufs.AgentDescription {
	ident := map[string]string{
		"service.name":        ServiceName,
		"service.version":     buildinfo.Version,
		"service.instance.id": uid.String(),
	}
	non := map[string]string{
		"host.name":        f.host.HostName,
		"host.arch":        f.host.Arch,
		"os.type":          f.host.OSType,
		"os.description":   f.host.OSDescription,
		AttrInstallMode:    cfg.Mode,
		AttrServerEndpoint: publicEndpoint(cfg.Server.Endpoint),
	}
	if f.collectorUID != "" {
		non[AttrCollectorInstanceUID] = f.collectorUID
	}
	for _, attrs := range []map[string]string{rt.Attributes(), f.running, f.keyring} {
		for k, v := range attrs {
			if v != "" {
				non[k] = v
			}
		}
	}
	return &protobufs.AgentDescription{
		IdentifyingAttributes:    keyValues(ident),
		NonIdentifyingAttributes: keyValues(non),
	}
}

// publicEndpoint drops any user:password from the URL before reporting it.
func publicEndpoint(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.User == nil {
		return endpoint
	}
	u.User = nil
	return u.String()
}

func keyValues(m map[string]string) []*protobufs.KeyValue {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	kvs := make([]*protobufs.KeyValue, 0, len(keys))
	for _, k := range keys {
		kvs = append(kvs, &protobufs.KeyValue{
			Key:   k,
			Value: &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: m[k]}},
		})
	}
	return kvs
}

func descriptionView(uid uuid.UUID, d *protobufs.AgentDescription) *Description {
	return &Description{
		InstanceUID:    uid.String(),
		Identifying:    attrMap(d.IdentifyingAttributes),
		NonIdentifying: attrMap(d.NonIdentifyingAttributes),
		Capabilities:   CapabilityNames(Capabilities),
	}
}

func attrMap(kvs []*protobufs.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.GetValue().GetStringValue()
	}
	return m
}

// CapabilityNames lists the set bits of caps by name ("ReportsStatus", …)
// in bit order.
func CapabilityNames(caps protobufs.AgentCapabilities) []string {
	var names []string
	for bit := uint64(1); bit != 0 && bit <= uint64(caps); bit <<= 1 {
		if uint64(caps)&bit == 0 {
			continue
		}
		name, ok := protobufs.AgentCapabilities_name[int32(bit)]
		if !ok {
			name = fmt.Sprintf("0x%x", bit)
		}
		names = append(names, strings.TrimPrefix(name, "AgentCapabilities_"))
	}
	return names
}

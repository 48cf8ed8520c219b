package container

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"reflect"
	"slices"
	"sort"
	"strings"

	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
)

// ErrUnreproducible wraps every reason a container cannot be recreated
// faithfully; the swap is refused before anything is touched.
var ErrUnreproducible = errors.New("the collector container cannot be recreated faithfully")

// createSpec is the create request for the new container.
type createSpec struct {
	Config  *container.Config
	Host    *container.HostConfig
	Network *network.NetworkingConfig
	// AddedMounts are anonymous volumes of the old container, now named so
	// the new container gets the same data (expected HostConfig.Mounts diff).
	AddedMounts []mount.Mount
}

// reproduce builds the create request that gives the new image the old
// container's configuration: env, mounts/volumes (anonymous volumes are
// re-attached by name), network mode and endpoint settings, restart policy,
// labels, command/entrypoint unless they were the old image's defaults,
// user, working dir, resources, log config and every other HostConfig
// setting (copied whole; verifyCreated checks the engine kept them).
// Settings of the old image are dropped so the new image's defaults apply.
//
// rawConfig and rawHost are the old container's Config and HostConfig as
// the engine sent them: a non-default setting this client library does not
// model would be dropped silently, so it is refused instead.
func reproduce(old container.InspectResponse, rawConfig, rawHost json.RawMessage, oldImage *dockerspec.DockerOCIImageConfig, newRef, storageDir string) (createSpec, error) {
	var problems []string
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	if old.Config == nil || old.HostConfig == nil {
		return createSpec{}, fmt.Errorf("%w: the engine returned no Config/HostConfig for %s", ErrUnreproducible, old.Name)
	}
	img := dockerspec.DockerOCIImageConfig{}
	if oldImage != nil {
		img = *oldImage
	}
	oc, oh := old.Config, old.HostConfig

	problems = append(problems, unknownSettings("Config", rawConfig, container.Config{}, knownConfigExtras)...)
	problems = append(problems, unknownSettings("HostConfig", rawHost, container.HostConfig{}, nil)...)

	// Config.
	if oc.Tty || oc.OpenStdin || oc.StdinOnce || oc.AttachStdin {
		bad("Config.Tty/OpenStdin/StdinOnce/AttachStdin: an interactive container (docker run -it) cannot be taken over")
	}
	nc := &container.Config{
		Image:           newRef,
		Domainname:      oc.Domainname,
		AttachStdout:    oc.AttachStdout,
		AttachStderr:    oc.AttachStderr,
		Env:             subtract(oc.Env, img.Env),
		Labels:          subtractMap(oc.Labels, img.Labels),
		NetworkDisabled: oc.NetworkDisabled,
		StopTimeout:     oc.StopTimeout,
	}
	// The hostname is the host's under host networking and the short ID by
	// default; only an explicit one is kept.
	if !oh.NetworkMode.IsHost() && !oh.NetworkMode.IsContainer() && oc.Hostname != "" && !strings.HasPrefix(old.ID, oc.Hostname) {
		nc.Hostname = oc.Hostname
	}
	if !slices.Equal(oc.Cmd, img.Cmd) {
		nc.Cmd = oc.Cmd
	}
	if !slices.Equal(oc.Entrypoint, img.Entrypoint) {
		nc.Entrypoint = oc.Entrypoint
	}
	if oc.User != img.User {
		nc.User = oc.User
	}
	if oc.WorkingDir != img.WorkingDir {
		nc.WorkingDir = oc.WorkingDir
	}
	if oc.StopSignal != img.StopSignal {
		nc.StopSignal = oc.StopSignal
	}
	if oc.Healthcheck != nil && !reflect.DeepEqual(oc.Healthcheck, img.Healthcheck) {
		nc.Healthcheck = oc.Healthcheck
	}
	for p := range oc.ExposedPorts {
		if _, fromImage := img.ExposedPorts[p.String()]; !fromImage {
			if nc.ExposedPorts == nil {
				nc.ExposedPorts = network.PortSet{}
			}
			nc.ExposedPorts[p] = struct{}{}
		}
	}

	// HostConfig: copied whole.
	nh := *oh
	if oh.AutoRemove {
		bad("HostConfig.AutoRemove (docker run --rm): the old container would be deleted when stopped and could not be kept for rollback")
	}
	if len(oh.Links) > 0 {
		bad("HostConfig.Links %v: legacy container links", oh.Links)
	}
	for _, m := range []struct {
		what string
		mode string
	}{{"NetworkMode", string(oh.NetworkMode)}, {"PidMode", string(oh.PidMode)}, {"IpcMode", string(oh.IpcMode)}, {"UTSMode", string(oh.UTSMode)}} {
		if target, ok := strings.CutPrefix(m.mode, "container:"); ok && (strings.HasPrefix(old.ID, target) || "/"+target == old.Name) {
			bad("HostConfig.%s %q: refers to the container being replaced", m.what, m.mode)
		}
	}

	// Volumes: an anonymous volume (image VOLUME or -v /path) would be
	// replaced by a fresh empty one; mount the same volume by name.
	explicit := map[string]bool{}
	for _, b := range oh.Binds {
		if parts := strings.Split(b, ":"); len(parts) >= 2 {
			explicit[path.Clean(parts[1])] = true
		}
	}
	for _, m := range oh.Mounts {
		explicit[path.Clean(m.Target)] = true
	}
	var added []mount.Mount
	for _, mp := range old.Mounts {
		dst := path.Clean(mp.Destination)
		if explicit[dst] || mp.Type != mount.TypeVolume || mp.Name == "" {
			continue
		}
		added = append(added, mount.Mount{Type: mount.TypeVolume, Source: mp.Name, Target: dst, ReadOnly: !mp.RW})
	}
	sort.Slice(added, func(i, j int) bool { return added[i].Target < added[j].Target })
	nh.Mounts = append(slices.Clone(oh.Mounts), added...)
	if len(oc.Volumes) > 0 {
		nc.Volumes = map[string]struct{}{}
		for v := range oc.Volumes {
			if _, fromImage := img.Volumes[v]; !fromImage {
				nc.Volumes[v] = struct{}{}
			}
		}
	}
	if storageDir != "" && !onMount(old.Mounts, storageDir) {
		bad("the supervisor storage dir %s is in the container's own file system, not on a volume or bind mount: its instance UID would be lost", storageDir)
	}

	// Networks.
	var nn *network.NetworkingConfig
	if old.NetworkSettings != nil {
		nets := slices.Sorted(maps.Keys(old.NetworkSettings.Networks))
		switch {
		case len(nets) > 1:
			bad("attached to %d networks %v: only one can be given when a container is created", len(nets), nets)
		case len(nets) == 1 && !oh.NetworkMode.IsHost() && !oh.NetworkMode.IsNone() && !oh.NetworkMode.IsContainer():
			ep := old.NetworkSettings.Networks[nets[0]]
			if ep != nil {
				aliases := slices.DeleteFunc(slices.Clone(ep.Aliases), func(a string) bool { return strings.HasPrefix(old.ID, a) })
				nn = &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{nets[0]: {
					IPAMConfig: ep.IPAMConfig, Links: ep.Links, Aliases: aliases, DriverOpts: ep.DriverOpts, GwPriority: ep.GwPriority,
				}}}
			}
		}
	}
	if len(problems) > 0 {
		return createSpec{}, fmt.Errorf("%w: %s", ErrUnreproducible, strings.Join(problems, "; "))
	}
	return createSpec{Config: nc, Host: &nh, Network: nn, AddedMounts: added}, nil
}

// knownConfigExtras are Config keys older engines send that this client
// does not model and that are safe to leave to the engine.
var knownConfigExtras = map[string]bool{
	"MacAddress": true, // deprecated in Config; the endpoint carries it
}

// unknownSettings returns a problem for every key of raw that model's JSON
// form lacks and whose value is not empty: a setting that would be lost.
func unknownSettings(section string, raw json.RawMessage, model any, extras map[string]bool) []string {
	if len(raw) == 0 {
		return nil
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal(raw, &got); err != nil {
		return []string{fmt.Sprintf("%s: unreadable: %v", section, err)}
	}
	known := jsonKeys(reflect.TypeOf(model))
	var out []string
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if known[k] || emptyJSON(got[k]) {
			continue
		}
		if extras[k] && section == "Config" {
			continue
		}
		out = append(out, fmt.Sprintf("%s.%s=%s is a setting this updater cannot reproduce", section, k, truncate(string(got[k]), 80)))
	}
	return out
}

// jsonKeys lists the JSON names of a struct's fields (embedded structs
// flattened, as encoding/json does).
func jsonKeys(t reflect.Type) map[string]bool {
	keys := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			maps.Copy(keys, jsonKeys(f.Type))
			continue
		}
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		keys[name] = true
	}
	return keys
}

func emptyJSON(v json.RawMessage) bool {
	var x any
	if json.Unmarshal(v, &x) != nil {
		return false
	}
	switch x := x.(type) {
	case nil:
		return true
	case bool:
		return !x
	case float64:
		return x == 0
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// verifyCreated compares the created container's HostConfig with the old
// one's (as the engine reports them): any difference other than the
// re-attached anonymous volumes means the engine dropped or changed a
// setting, and the swap is refused.
func verifyCreated(oldRaw, newRaw json.RawMessage, added []mount.Mount) error {
	var o, n map[string]any
	if err := json.Unmarshal(oldRaw, &o); err != nil {
		return fmt.Errorf("old HostConfig: %w", err)
	}
	if err := json.Unmarshal(newRaw, &n); err != nil {
		return fmt.Errorf("new HostConfig: %w", err)
	}
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(union(o, n))) {
		ov, nv := o[k], n[k]
		if k == "Mounts" {
			ov, nv = normMounts(ov), normMounts(nv)
			for _, m := range added {
				nv = slices.DeleteFunc(nv.([]any), func(x any) bool {
					mm, _ := x.(map[string]any)
					return mm["Target"] == m.Target && mm["Source"] == m.Source
				})
			}
		}
		if !reflect.DeepEqual(ov, nv) && !(isEmpty(ov) && isEmpty(nv)) {
			a, _ := json.Marshal(ov)
			b, _ := json.Marshal(nv)
			diffs = append(diffs, fmt.Sprintf("HostConfig.%s: old %s, new %s", k, truncate(string(a), 80), truncate(string(b), 80)))
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%w: the engine did not reproduce: %s", ErrUnreproducible, strings.Join(diffs, "; "))
	}
	return nil
}

func normMounts(v any) any {
	l, _ := v.([]any)
	if l == nil {
		l = []any{}
	}
	return l
}

func isEmpty(v any) bool {
	b, _ := json.Marshal(v)
	return emptyJSON(b)
}

func union(a, b map[string]any) map[string]any {
	u := maps.Clone(a)
	maps.Copy(u, b)
	return u
}

// onMount reports whether dir is at or below a mount's destination.
func onMount(mounts []container.MountPoint, dir string) bool {
	dir = path.Clean(dir)
	for _, m := range mounts {
		d := path.Clean(m.Destination)
		if dir == d || strings.HasPrefix(dir, strings.TrimSuffix(d, "/")+"/") {
			return true
		}
	}
	return false
}

func subtract(list, remove []string) []string {
	var out []string
	for _, v := range list {
		if !slices.Contains(remove, v) {
			out = append(out, v)
		}
	}
	return out
}

func subtractMap(m, remove map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if rv, ok := remove[k]; ok && rv == v {
			continue
		}
		out[k] = v
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

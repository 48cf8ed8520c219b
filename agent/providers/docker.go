package providers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"

	"github.com/myriarch/myriarch/internal/vars"
)

// dockerProvider publishes one mapping per running container and follows
// Docker events to keep the list current. When no engine answers it
// publishes no mappings and keeps looking, without failing: Docker is
// optional on a host.
type dockerProvider struct {
	host  string // empty: DOCKER_HOST or the platform default
	retry time.Duration
	log   *slog.Logger
}

var _ DynamicProvider = (*dockerProvider)(nil)

func (d *dockerProvider) Name() string { return "docker" }

func (d *dockerProvider) newClient() (*client.Client, error) {
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if d.host != "" {
		opts = append(opts, client.WithHost(d.host))
	}
	return client.New(opts...)
}

func (d *dockerProvider) Run(ctx context.Context, set func([]vars.Mapping)) error {
	cli, err := d.newClient()
	if err != nil {
		// A malformed DOCKER_HOST is a configuration error, not an absent
		// engine; Validate catches the configured host earlier.
		return fmt.Errorf("docker: %w", err)
	}
	defer cli.Close()

	absentSince := time.Time{}
	for {
		if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err == nil {
			break
		} else if ctx.Err() != nil {
			return nil
		} else if absentSince.IsZero() {
			absentSince = time.Now()
			d.log.Info("docker: no engine answers; no container mappings until one does", "host", cli.DaemonHost(), "error", err)
			set(nil)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(d.retry):
		}
	}
	return d.follow(ctx, cli, set)
}

// follow subscribes to container events, then lists the running containers,
// so no start or stop between the two is lost.
func (d *dockerProvider) follow(ctx context.Context, cli *client.Client, set func([]vars.Mapping)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ev := cli.Events(ctx, client.EventsListOptions{
		Filters: make(client.Filters).Add("type", string(events.ContainerEventType)),
	})
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{})
	if err != nil {
		return fmt.Errorf("docker: listing containers: %w", err)
	}
	current := map[string]vars.Mapping{}
	for _, c := range list.Items {
		m, ok, err := d.inspect(ctx, cli, c.ID)
		if err != nil {
			return err
		}
		if ok {
			current[c.ID] = m
		}
	}
	set(sortedMappings(current))
	d.log.Info("docker: following containers", "host", cli.DaemonHost(), "running", len(current))

	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-ev.Err:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("docker: event stream: %w", err)
		case msg := <-ev.Messages:
			id := msg.Actor.ID
			changed := false
			switch msg.Action {
			case events.ActionStart, events.ActionRename, events.ActionRestart, events.ActionUpdate:
				m, ok, err := d.inspect(ctx, cli, id)
				if err != nil {
					return err
				}
				if ok {
					changed = !mappingEqual(current[id], m)
					current[id] = m
				} else if _, had := current[id]; had {
					delete(current, id)
					changed = true
				}
			case events.ActionDie, events.ActionStop, events.ActionKill, events.ActionDestroy, events.ActionRemove:
				if _, had := current[id]; had {
					// A kill may not stop the container; inspect to be sure.
					m, ok, err := d.inspect(ctx, cli, id)
					if err != nil {
						return err
					}
					if ok {
						current[id] = m
					} else {
						delete(current, id)
						changed = true
					}
				}
			}
			if changed {
				set(sortedMappings(current))
			}
		}
	}
}

// inspect builds the mapping of a running container (paused ones included:
// they have not stopped); ok is false when the container is gone or stopped.
func (d *dockerProvider) inspect(ctx context.Context, cli *client.Client, id string) (vars.Mapping, bool, error) {
	res, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return vars.Mapping{}, false, nil
		}
		return vars.Mapping{}, false, fmt.Errorf("docker: inspecting container %s: %w", id, err)
	}
	c := res.Container
	if c.State == nil || !c.State.Running {
		return vars.Mapping{}, false, nil
	}
	return containerMapping(c), true, nil
}

// containerMapping is the mapping of one container: the Docker provider's variables
// id, name, image, labels (an object), cmd (the process's path and
// arguments), ports (see containerPorts) and paths.log; the same container
// fields as container.{id, name, image.name, labels.*}, which Blueprints
// written before read; and one add_fields processor carrying the container
// fields. Nothing else is repeated: myriarchd keeps each object also as its
// JSON text, within 64 KiB per updater.
func containerMapping(c container.InspectResponse) vars.Mapping {
	labels := map[string]any{}
	image := c.Image
	if c.Config != nil {
		for k, v := range c.Config.Labels {
			labels[k] = v
		}
		if c.Config.Image != "" {
			image = c.Config.Image
		}
	}
	name := strings.TrimPrefix(c.Name, "/")
	cmd := []any{}
	if c.Path != "" {
		cmd = append(cmd, c.Path)
	}
	for _, a := range c.Args {
		cmd = append(cmd, a)
	}
	fields := func() map[string]any {
		return map[string]any{
			"id":     c.ID,
			"name":   name,
			"image":  map[string]any{"name": image},
			"labels": maps.Clone(labels),
		}
	}
	return vars.Mapping{
		ID: c.ID,
		Vars: map[string]any{
			"id":        c.ID,
			"name":      name,
			"image":     image,
			"labels":    maps.Clone(labels),
			"cmd":       cmd,
			"ports":     containerPorts(c),
			"paths":     map[string]any{"log": c.LogPath},
			"container": fields(),
		},
		Processors: []any{map[string]any{
			"add_fields": map[string]any{"target": "container", "fields": fields()},
		}},
	}
}

// sortedMappings orders containers by name, then id, so snapshots do not
// depend on map order.
func sortedMappings(current map[string]vars.Mapping) []vars.Mapping {
	out := slices.Collect(maps.Values(current))
	slices.SortFunc(out, func(a, b vars.Mapping) int {
		an, _ := a.Vars["name"].(string)
		bn, _ := b.Vars["name"].(string)
		return cmp.Or(cmp.Compare(an, bn), cmp.Compare(a.ID, b.ID))
	})
	return out
}

func mappingEqual(a, b vars.Mapping) bool {
	if a.ID != b.ID {
		return false
	}
	av, errA := vars.Normalize(a.Vars)
	bv, errB := vars.Normalize(b.Vars)
	return errors.Join(errA, errB) == nil && vars.Equal(av, bv)
}

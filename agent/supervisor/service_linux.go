package supervisor

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// systemctl runs one systemctl verb on the unit; "--" keeps a name starting
// with "-" from being read as an option.
func (s *Service) systemctl(ctx context.Context, args ...string) (string, error) {
	args = append(args, "--", s.name)
	cmd := exec.CommandContext(ctx, "systemctl", args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("systemctl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

func (s *Service) start(ctx context.Context) error {
	_, err := s.systemctl(ctx, "start")
	return err
}

func (s *Service) stop(ctx context.Context) error {
	_, err := s.systemctl(ctx, "stop")
	return err
}

func (s *Service) restart(ctx context.Context) error {
	s.log.Info("restarting supervisor service", "service", s.name)
	_, err := s.systemctl(ctx, "restart")
	return err
}

func (s *Service) pid(ctx context.Context) int {
	out, err := s.systemctl(ctx, "show", "--property=MainPID", "--value")
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(out))
	return pid
}

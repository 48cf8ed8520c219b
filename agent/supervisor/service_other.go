//go:build !linux && !windows

package supervisor

import (
	"context"
	"errors"
)

func (s *Service) start(ctx context.Context) error   { return errors.ErrUnsupported }
func (s *Service) stop(ctx context.Context) error    { return errors.ErrUnsupported }
func (s *Service) restart(ctx context.Context) error { return errors.ErrUnsupported }
func (s *Service) pid(ctx context.Context) int       { return 0 }

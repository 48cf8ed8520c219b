//go:build !linux

package testenv

import "errors"

// procAttr: private clusters are started on Linux only.
type procAttr struct{}

var errNoCluster = errors.New("private PostgreSQL clusters are started on Linux only; set " + PostgresEnv)

func startCluster() (*Cluster, error) { return nil, errNoCluster }

// Start, Stop and Kill control a private cluster (Linux only).
func (c *Cluster) Start() error { return errNoCluster }
func (c *Cluster) Stop() error  { return errNoCluster }
func (c *Cluster) Kill() error  { return errNoCluster }

func (c *Cluster) stopAndRemove() error { return errNoCluster }

func removeTemplate() error { return nil }

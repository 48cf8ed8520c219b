//go:build !linux

package wsconn

func addPlatformPollers(map[string]func(Options) Poller) {}

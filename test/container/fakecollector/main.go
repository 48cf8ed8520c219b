// Command fakecollector stands in for the supervisor+collector image in the
// container-mode tests: a static binary for FROM scratch images that
//
//   - listens on 127.0.0.1:$FAKE_PORT (host networking) and answers
//     "<version>\n" (the tests measure the swap downtime against it),
//   - like the supervisor, keeps an instance UID in
//     $FAKE_STORAGE/persistent_state.yaml, created on first start,
//   - exits 3 at once when $FAKE_EXIT=1 (a broken release),
//   - with the argument "healthcheck", probes the port (Docker HEALTHCHECK);
//     "healthcheck-fail" always fails.
package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/google/uuid"
)

func main() {
	port := os.Getenv("FAKE_PORT")
	if len(os.Args) > 1 && os.Args[1] == "healthcheck-fail" {
		os.Exit(1) // a release whose health check never passes
	}
	if len(os.Args) > 1 && os.Args[1] == "healthcheck" {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
		if err != nil {
			os.Exit(1)
		}
		c.Close()
		return
	}
	version := os.Getenv("FAKE_VERSION")
	if os.Getenv("FAKE_EXIT") == "1" {
		fmt.Fprintln(os.Stderr, "fakecollector", version, "is broken: exiting")
		os.Exit(3)
	}
	if dir := os.Getenv("FAKE_STORAGE"); dir != "" {
		if err := ensureState(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, version)
	}), ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	fmt.Println("fakecollector", version, "listening on", ln.Addr())
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func ensureState(dir string) error {
	p := filepath.Join(dir, "persistent_state.yaml")
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return err
	}
	return os.WriteFile(p, []byte("instance_id: "+id.String()+"\nlast_remote_config_status: null\n"), 0o600)
}

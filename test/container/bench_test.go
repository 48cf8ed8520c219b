package container_test

import (
	"context"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/myriarch/myriarch/internal/testenv"
)

// BenchmarkContainerSwapDowntime measures how long the collector does not
// answer on its port while the engine swaps its container (old stopped →
// new started → new process listening), next to the time the same
// container takes to start from scratch (docker start → listening).
//
//	DOCKER_HOST=$(make -s docker-up) go test -run '^$' -bench ContainerSwapDowntime -benchtime 5x ./test/container/
func BenchmarkContainerSwapDowntime(b *testing.B) {
	cli := testenv.Docker(b)
	ctx := context.Background()
	k := newKeys(b)
	repo := randName("myriarch-ct-img-")
	loadImage(b, cli, fakeImage(b, imageSpec{version: "0.1.0"}), repo+":0.1.0")
	dir := b.TempDir()
	hash, sig := publishTarball(b, k, fakeImage(b, imageSpec{version: "0.2.0"}), repo+":0.2.0", dir, "c.tar")
	b.Cleanup(func() { removeImage(cli, repo+":0.2.0") })
	srv, _ := tarballServer(b, dir)

	var down, cold, total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		c := startCollector(b, cli, repo+":0.1.0", true)
		// Its own start time: stop it, then time a plain start.
		if _, err := cli.ContainerStop(ctx, c.name, client.ContainerStopOptions{}); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		if _, err := cli.ContainerStart(ctx, c.name, client.ContainerStartOptions{}); err != nil {
			b.Fatal(err)
		}
		if waitServing(b, c.port, 20*time.Second) == "" {
			b.Fatal("no answer after start")
		}
		cold += time.Since(t0)
		o := engineOptions(c, b.TempDir(), k)
		o.install.HealthWindow = time.Second
		eng := newEngine(b, o)
		if err := eng.Recover(ctx); err != nil {
			b.Fatal(err)
		}
		rec := newRecorder()
		b.StartTimer()
		t1 := time.Now()
		stop := watchDowntime(c.port)
		eng.HandlePackages(ctx, offer("0.2.0", srv.URL+"/c.tar", hash, sig, nil), rec.report)
		st := rec.wait(b, "0.2.0", 2*time.Minute)
		down += stop()
		total += time.Since(t1)
		b.StopTimer()
		if st.GetStatus() != protobufs.PackageStatusEnum_PackageStatusEnum_Installed {
			b.Fatalf("%s: %s", st.GetStatus(), st.GetErrorMessage())
		}
		eng.Close()
		removeImage(cli, repo+":0.2.0")
	}
	n := float64(b.N)
	b.ReportMetric(float64(down.Milliseconds())/n, "downtime-ms")
	b.ReportMetric(float64(cold.Milliseconds())/n, "own-start-ms")
	b.ReportMetric(float64((down-cold).Milliseconds())/n, "beyond-start-ms")
	b.ReportMetric(float64(total.Milliseconds())/n, "swap-total-ms")
}

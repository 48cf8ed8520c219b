package blueprint

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/myriarch/myriarch/internal/testenv"
)

// gitRepo is a throwaway Git work tree built by a test.
type gitRepo struct {
	t   *testing.T
	dir string
}

func newGitRepo(t *testing.T) *gitRepo {
	t.Helper()
	testenv.Tool(t, "git", "git")
	r := &gitRepo{t: t, dir: t.TempDir()}
	r.git("init", "-q")
	return r
}

func (r *gitRepo) git(args ...string) {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", r.dir,
		"-c", "user.name=test", "-c", "user.email=test@example.invalid", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (r *gitRepo) write(rel, content string) {
	r.t.Helper()
	p := filepath.Join(r.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *gitRepo) commit(msg string) {
	r.t.Helper()
	r.git("add", "-A")
	r.git("commit", "-q", "-m", msg)
}

const pinnedBlueprint = `name: pinned
version: 1
owner: team-a
components:
  - name: in
    class: receiver
    type: otlp
    version: 1
pipelines:
  traces:
    - component: in
    - component: a/exp@%PIN%
`

const headBlueprint = `name: head
version: 1
owner: team-a
components:
  - name: in
    class: receiver
    type: otlp
    version: 1
pipelines:
  logs:
    - component: in
    - component: a/exp
      track: head
`

// mixedBlueprint places two versions of one shared Component, which would
// render two configs under one id.
const mixedBlueprint = `name: mixed
version: 1
owner: team-a
components:
  - name: in
    class: receiver
    type: otlp
    version: 1
pipelines:
  traces:
    - component: in
    - component: a/exp@1
  logs:
    - component: in
    - component: a/exp
      track: head
`

func exporterAt(version int, endpoint string) string {
	return "name: exp\nclass: exporter\ntype: otlp\nversion: " + strconv.Itoa(version) +
		"\nowner: team-a\nconfig:\n  endpoint: " + endpoint + "\n"
}

// renderedExporters returns the endpoint of every exporter in a rendered
// config, by rendered id.
func renderedExporters(t *testing.T, cfg []byte) map[string]string {
	t.Helper()
	var c struct {
		Exporters map[string]struct {
			Endpoint string `yaml:"endpoint"`
		} `yaml:"exporters"`
	}
	if err := yaml.Unmarshal(cfg, &c); err != nil {
		t.Fatalf("rendered config is not YAML: %v", err)
	}
	out := map[string]string{}
	for id, e := range c.Exporters {
		out[id] = e.Endpoint
	}
	return out
}

// buildHistory commits the shared exporter through versions 1, 2 (twice)
// and 3 into dir's repository, with the Blueprints of this file at head.
func buildHistory(repo *gitRepo, pin string) {
	repo.write("teams/a/components/exp.yaml", exporterAt(1, "v1.internal:4317"))
	repo.write("teams/a/blueprints/head.yaml", headBlueprint)
	repo.commit("exp v1")
	repo.write("teams/a/components/exp.yaml", exporterAt(2, "v2-first.internal:4317"))
	repo.commit("exp v2")
	repo.write("teams/a/components/exp.yaml", exporterAt(2, "v2-fixed.internal:4317"))
	repo.commit("exp v2, endpoint fixed without a version bump")
	repo.write("teams/z/components/unrelated.yaml", "name: unrelated\nclass: processor\ntype: batch\nversion: 1\nowner: z\n")
	repo.commit("unrelated change")
	repo.write("teams/a/components/exp.yaml", exporterAt(3, "v3.internal:4317"))
	repo.write("teams/a/blueprints/pinned.yaml", strings.ReplaceAll(pinnedBlueprint, "%PIN%", pin))
	repo.write("teams/a/blueprints/mixed.yaml", mixedBlueprint)
	repo.commit("exp v3")
}

// TestRenderPinBehindHeadFromGitHistory checks that a pin behind head
// renders the Component file from the newest commit with that version,
// that track: head renders head, and that the drift finding stands.
func TestRenderPinBehindHeadFromGitHistory(t *testing.T) {
	for _, tc := range []struct {
		pin, want string
	}{
		{pin: "1", want: "v1.internal:4317"},
		{pin: "2", want: "v2-fixed.internal:4317"}, // the newest commit with version 2
		{pin: "3", want: "v3.internal:4317"},       // at head: no history needed
	} {
		t.Run("pin@"+tc.pin, func(t *testing.T) {
			repo := newGitRepo(t)
			buildHistory(repo, tc.pin)
			est, err := Load(repo.dir)
			if err != nil {
				t.Fatal(err)
			}
			fs, err := est.JudgeBlueprint("a/pinned")
			if err != nil {
				t.Fatal(err)
			}
			wantDrift := tc.pin != "3"
			if gotDrift := len(fs) == 1 && fs[0].Kind == KindLibraryDrift && fs[0].Lane == LaneTraces; gotDrift != wantDrift || (!wantDrift && len(fs) != 0) {
				t.Errorf("findings = %v, want drift=%v", fs, wantDrift)
			}
			cfg, err := est.Render(context.Background(), "a/pinned", GitHistory{})
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			if got := renderedExporters(t, cfg); got["otlp/a.exp"] != tc.want || len(got) != 1 {
				t.Errorf("exporters = %v, want otlp/a.exp at %s", got, tc.want)
			}

			cfg, err = est.Render(context.Background(), "a/head", GitHistory{})
			if err != nil {
				t.Fatalf("render head: %v", err)
			}
			if got := renderedExporters(t, cfg)["otlp/a.exp"]; got != "v3.internal:4317" {
				t.Errorf("track: head rendered %q, want head's v3.internal:4317", got)
			}

			_, err = est.Render(context.Background(), "a/mixed", GitHistory{})
			var refused *RefusedError
			if !errors.As(err, &refused) || !strings.Contains(err.Error(), `"otlp/a.exp" collides`) ||
				!strings.Contains(err.Error(), "a/exp@1") || !strings.Contains(err.Error(), "a/exp@3") {
				t.Errorf("mixed versions: err = %v, want a collision naming both origins", err)
			}
		})
	}
}

// TestRenderPinBehindHeadRefused covers the two refusals: no Git work tree,
// and no commit in which the Component had the pinned version.
func TestRenderPinBehindHeadRefused(t *testing.T) {
	t.Run("no commit with that version", func(t *testing.T) {
		repo := newGitRepo(t)
		repo.write("teams/a/components/exp.yaml", exporterAt(2, "v2.internal:4317"))
		repo.commit("exp starts at v2")
		repo.write("teams/a/components/exp.yaml", exporterAt(3, "v3.internal:4317"))
		repo.write("teams/a/blueprints/pinned.yaml", strings.ReplaceAll(pinnedBlueprint, "%PIN%", "1"))
		repo.commit("exp v3")
		est, err := Load(repo.dir)
		if err != nil {
			t.Fatal(err)
		}
		_, err = est.Render(context.Background(), "a/pinned", GitHistory{})
		var refused *RefusedError
		if !errors.As(err, &refused) || !strings.Contains(err.Error(), "no commit") || !strings.Contains(err.Error(), "version 1") {
			t.Errorf("err = %v, want a refusal saying no commit has version 1", err)
		}
		if fs := est.Judge(); len(fs) != 1 || fs[0].Kind != KindLibraryDrift {
			t.Errorf("findings = %v, want the drift finding to stand", fs)
		}
	})
	t.Run("not a Git work tree", func(t *testing.T) {
		dir := t.TempDir()
		plain := &gitRepo{t: t, dir: dir}
		plain.write("teams/a/components/exp.yaml", exporterAt(3, "v3.internal:4317"))
		plain.write("teams/a/blueprints/pinned.yaml", strings.ReplaceAll(pinnedBlueprint, "%PIN%", "2"))
		plain.write("teams/a/blueprints/head.yaml", headBlueprint)
		est, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		_, err = est.Render(context.Background(), "a/pinned", GitHistory{})
		var refused *RefusedError
		if !errors.As(err, &refused) || !strings.Contains(err.Error(), "not a Git work tree") {
			t.Errorf("err = %v, want a refusal saying the root is not a Git work tree", err)
		}
		// The other Blueprint of the same team still renders.
		if _, err := est.Render(context.Background(), "a/head", GitHistory{}); err != nil {
			t.Errorf("head Blueprint: %v", err)
		}
		// Without any History the refusal is just as clear.
		if _, err := est.Render(context.Background(), "a/pinned", nil); err == nil || !strings.Contains(err.Error(), "no history") {
			t.Errorf("nil History: err = %v", err)
		}
	})
}

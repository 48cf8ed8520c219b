package artifacts

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/myriarch/myriarch/server/estate"
	"github.com/myriarch/myriarch/server/store"
)

type anyToken struct{}

func (anyToken) Authenticate(r *http.Request) (store.Credential, error) {
	if r.Header.Get("Authorization") == "" {
		return store.Credential{}, errors.New("no credential")
	}
	return store.Credential{Kind: "token", ID: "t"}, nil
}

// TestServesOnlyInsideTheEstate: a catalog file swapped for a link out of
// the estate after the load, or a path climbing out, is not served.
func TestServesOnlyInsideTheEstate(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "shadow")
	os.WriteFile(outside, []byte("root:secret\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "artifacts"), 0o755)
	art := filepath.Join(dir, "artifacts", "a.tar.gz")
	os.WriteFile(art, []byte("collector"), 0o644)

	h := New(anyToken{}, "/artifacts/")
	h.SetEstate(&estate.Estate{Dir: dir, Packages: map[string][]estate.PackageVersion{"p": {{
		Artifacts: []estate.Artifact{{File: "artifacts/a.tar.gz"}, {File: "../" + filepath.Base(filepath.Dir(outside)) + "/shadow"}}}}}})
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func(path string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer x")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/artifacts/artifacts/a.tar.gz"); code != 200 || body != "collector" {
		t.Fatalf("catalog file: %d %q", code, body)
	}
	if code, _ := get("/artifacts/../" + filepath.Base(filepath.Dir(outside)) + "/shadow"); code != http.StatusNotFound {
		t.Errorf("a path climbing out of the estate: %d, want 404", code)
	}
	os.Remove(art)
	os.Symlink(outside, art)
	if code, body := get("/artifacts/artifacts/a.tar.gz"); code != http.StatusNotFound {
		t.Errorf("a catalog file replaced by a link out of the estate: %d %q, want 404", code, body)
	}
}

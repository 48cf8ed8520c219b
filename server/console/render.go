package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// assetVersion is a content hash per asset: pages link /static/NAME?v=HASH,
// so assets can be cached for good and still change with the binary.
var assetVersion = func() map[string]string {
	out := map[string]string{}
	_ = fs.WalkDir(staticFS, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := staticFS.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[strings.TrimPrefix(p, "static/")] = hex.EncodeToString(sum[:6])
		return nil
	})
	return out
}()

func serveAsset(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(path.Clean(r.URL.Path), "/static/")
	v, ok := assetVersion[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if r.URL.Query().Get("v") == v {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		w.Header().Set("Cache-Control", "no-cache")
	}
	http.ServeFileFS(w, r, staticFS, "static/"+name)
}

var templates = template.Must(template.New("").Funcs(template.FuncMap{
	"show":        func(s string) string { return displayText(s, shortText, false) },
	"showLong":    func(s string) string { return displayText(s, longText, true) },
	"asset":       func(name string) string { return "/static/" + name + "?v=" + assetVersion[name] },
	"short":       shortUID,
	"num":         num,
	"ts":          func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"ago":         ago,
	"pct":         func(n, total int) string { return pct(n, total) },
	"stateWord":   func(s string) string { return strings.ReplaceAll(s, "_", " ") },
	"bytesPerSec": bytesPerSec,
	"pathEsc":     url.PathEscape,
	"showConfig":  func(s string) string { return displayText(s, maxConfigShown, true) },
	"wavesOf": func(caption string, w []waveView) any {
		return struct {
			Caption string
			Waves   []waveView
		}{caption, w}
	},
}).ParseFS(templateFS, "templates/*.html"))

// view is what every page template gets.
type view struct {
	Title string
	Nav   string // the current section: overview, agents, fleets, pairings, tokens
	CSRF  string
	// Events is the live stream URL of the page ("" when it is not live).
	Events string
	Flash  string
	Error  string
	// Refresh is a console page to go on to at once ("" for none).
	Refresh string
	Data    any
}

// render executes a page template into a buffer first, so a template error
// is a clean 500 rather than half a page.
func (c *Console) render(w http.ResponseWriter, _ *http.Request, status int, name string, v view) {
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, name, v); err != nil {
		c.log.Error("console template failed", "template", name, "err", err)
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fail shows an error page inside the console's frame.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, s *session, status int, msg string) {
	c.render(w, r, status, "error", view{Title: http.StatusText(status), CSRF: s.csrf, Error: msg})
}

// shortUID is the end of an instance UID: UUIDv7s share their leading
// timestamp, their random tail tells agents apart.
func shortUID(s string) string {
	if len(s) > 12 {
		return "…" + s[len(s)-12:]
	}
	return s
}

// num writes n with thousands separators.
func num(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func pct(n, total int) string {
	if total <= 0 {
		return "0"
	}
	return strconv.FormatFloat(100*float64(n)/float64(total), 'f', 1, 64)
}

// bytesPerSec writes a transfer rate in binary units.
func bytesPerSec(v float64) string {
	units := []string{"B/s", "KiB/s", "MiB/s", "GiB/s"}
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[i]
}

// ago says how long ago t was, coarsely.
func ago(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := time.Since(t)
	switch {
	case d < 0:
		return "just now"
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + " s ago"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + " min ago"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + " h ago"
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + " days ago"
}

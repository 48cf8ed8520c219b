package console_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestAuditInBrowser: the audit page in headless Chromium — reached from
// the navigation, filtered by actor and outcome and by a time typed in a
// datetime-local field, paged to older records and back, the chain
// verified, readable on a phone, and no complaint from the page itself
// (Content-Security-Policy, scripts).
func TestAuditInBrowser(t *testing.T) {
	e := newEnv(t)
	c := newChrome(t)
	c.do("login page", chromedp.Navigate(e.base+"/login"), chromedp.WaitVisible(chromedp.ID("token")))
	c.load("log in", chromedp.SendKeys(chromedp.ID("token"), e.srv.AdminToken()), chromedp.Submit(chromedp.ID("token")))
	// The login is the trail's first record, then 120 more.
	recs := e.auditRecords(120)

	c.load("the audit page", chromedp.Click(chromedp.CSS(`nav a[href="/audit"]`)))
	if h := c.text("h1"); h != "Audit trail" {
		t.Fatalf("h1 %q", h)
	}
	if h := c.text("#h-records"); h != "100 records, newest first; older ones on the next page" {
		t.Fatalf("first page: %q", h)
	}
	c.screenshot(screenshotDir(t), "audit.png")
	c.load("older", chromedp.Click(chromedp.CSS(`a[rel=next]`)))
	if h := c.text("#h-records"); h != "21 records, newest first" {
		t.Fatalf("older page: %q", h)
	}
	c.load("newest", chromedp.Click(chromedp.CSS(`a[aria-label="Newest records"]`)))
	if first := c.text("#audit-result tbody tr td:nth-child(2)"); first != "121" {
		t.Fatalf("the newest page starts at %q", first)
	}

	c.load("filter", chromedp.SendKeys(chromedp.ID("f-actor"), "alice"), chromedp.SetValue(chromedp.ID("f-outcome"), "denied"),
		chromedp.Click(chromedp.CSS(`form.filters button[type=submit]`)))
	if h := c.text("#h-records"); h != "20 records, newest first" { // 60 of alice's, a third denied
		t.Fatalf("alice denied: %q", h)
	}
	for _, cell := range strings.Split(c.text("#audit-result tbody"), "\n") {
		if strings.Contains(cell, "bob") || (strings.Contains(cell, "\tok\t") || strings.Contains(cell, "\terror\t")) {
			t.Fatalf("a row outside the filter: %q", cell)
		}
	}
	// A minute after the last record: nothing before it is left out.
	until := recs[len(recs)-1].Time.UTC().Add(2 * time.Minute).Format("2006-01-02T15:04")
	c.load("until", chromedp.SetValue(chromedp.ID("f-until"), until), chromedp.Click(chromedp.CSS(`form.filters button[type=submit]`)))
	if h := c.text("#h-records"); h != "20 records, newest first" {
		t.Fatalf("until %s: %q", until, h)
	}
	if u := string(c.eval("url", `location.search`)); !strings.Contains(u, "until=") || !strings.Contains(u, "actor=alice") {
		t.Fatalf("the filters are not in the address: %s", u)
	}

	c.load("verify", chromedp.Click(chromedp.ID("verify-link")))
	if v := c.text("#verify-result"); v != "Verified: all 121 records follow from the trail's anchor." {
		t.Fatalf("verification: %q", v)
	}
	if h := c.text("#h-records"); h != "20 records, newest first" {
		t.Fatalf("the verification dropped the filters: %q", h)
	}

	c.do("phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(1)))
	c.do("audit on a phone", chromedp.Navigate(e.base+"/audit"), chromedp.WaitVisible(chromedp.CSS("main h1")))
	if w := c.eval("width", `[document.documentElement.scrollWidth, window.innerWidth]`); !fits(w) {
		t.Errorf("/audit on a phone: page width %s", w)
	}
	c.checkNoProblems()
}

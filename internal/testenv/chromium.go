package testenv

import "testing"

// chromiumBinary is where Debian's chromium package installs the browser.
const chromiumBinary = "/usr/bin/chromium"

// ChromiumPath returns the path of the Chromium binary for chromedp.ExecPath,
// failing the test when Chromium is not installed.
func ChromiumPath(t testing.TB) string {
	t.Helper()
	if firstExecutable(chromiumBinary) == "" {
		t.Fatalf("testenv: no %s; "+installHint, chromiumBinary, "chromium")
	}
	return chromiumBinary
}

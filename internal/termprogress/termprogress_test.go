package termprogress

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"
)

// lastFrame is the last non-blank frame a bar wrote (frames start with \r).
func lastFrame(s string) string {
	frames := strings.Split(s, "\r")
	for i := len(frames) - 1; i >= 0; i-- {
		if strings.TrimSpace(frames[i]) != "" {
			return frames[i]
		}
	}
	return ""
}

// What the terminal shows after each Add — the bar's last frame — has the label and
// the counter of the same step.
func TestProgressBarLabelMatchesCount(t *testing.T) {
	var buf bytes.Buffer
	p := New(&buf, true, 10, "train", false)
	clock := time.Unix(100, 0)
	p.now = func() time.Time { return clock }
	drawn := 0
	for i := 1; i <= 9; i++ { // the 10th finishes and clears the bar
		n := buf.Len()
		step := strconv.Itoa(i)
		p.Add(1, "step "+step)
		if buf.Len() > n {
			drawn++
			if f := lastFrame(buf.String()); !strings.Contains(f, "step "+step+" ") || !strings.Contains(f, "("+step+"/10)") {
				t.Errorf("after step %s the bar shows %q", step, f)
			}
		}
		clock = clock.Add(40 * time.Millisecond) // some steps fall between frames
	}
	if drawn < 3 {
		t.Fatalf("only %d frames drawn", drawn)
	}
}

// A log line during a bar lands on a line of its own (the bar is cleared first and
// drawn again after it).
func TestProgressLogfAboveBar(t *testing.T) {
	var buf bytes.Buffer
	p := New(&buf, true, 10, "sweep", false)
	p.Add(1, "a")
	p.Logf("run %d recorded", 3)
	s := buf.String()
	i := strings.Index(s, "run 3 recorded\n")
	if i < 0 {
		t.Fatalf("log line missing: %q", s)
	}
	if before := s[:i]; !strings.HasSuffix(before, "\r") {
		t.Fatalf("log line written onto the bar's line: %q", s)
	}
	if !strings.Contains(s[i:], "1/10") {
		t.Fatalf("bar not drawn again after the log line: %q", s[i:])
	}
}

// Without a terminal a slow run still prints a line at least every plainEvery.
func TestProgressPlainLinesByTime(t *testing.T) {
	var buf bytes.Buffer
	p := New(&buf, false, 1000, "train", false)
	clock := time.Unix(0, 0)
	p.now = func() time.Time { return clock }
	p.last = clock
	p.Add(1, "step 1")
	if buf.Len() != 0 {
		t.Fatalf("line before a tenth of the work or %v: %q", plainEvery, buf.String())
	}
	clock = clock.Add(plainEvery)
	p.Add(1, "step 2")
	if !strings.Contains(buf.String(), "train 2/1000 step 2") {
		t.Fatalf("no line after %v: %q", plainEvery, buf.String())
	}
	buf.Reset()
	p.Add(98, "step 100") // crosses a tenth
	if !strings.Contains(buf.String(), "100/1000") {
		t.Fatalf("no line at a tenth of the work: %q", buf.String())
	}
	q := New(&buf, false, 10, "x", true)
	buf.Reset()
	q.Add(10, "done")
	q.Logf("hidden")
	if buf.Len() != 0 {
		t.Fatalf("quiet progress wrote %q", buf.String())
	}
}

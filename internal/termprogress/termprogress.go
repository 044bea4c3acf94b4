// Package termprogress reports the advance of long work on a terminal or in a log:
// a progress bar on an interactive terminal, plain log lines otherwise, and log
// lines that never break the bar.
package termprogress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Reporter reports the advance of long work: a progress bar on an interactive
// terminal, plain log lines on stderr otherwise (CI, pipes, files): one every tenth
// of the work or every plainEvery of time, whichever comes first, so a slow run
// still shows it is alive. It is silent when quiet is set (e.g. --json output to a
// pipe still logs to stderr; quiet is for tests).
type Reporter struct {
	mu       sync.Mutex
	bar      *progressbar.ProgressBar
	total    int64
	done     int64
	every    int64
	label    string
	w        io.Writer
	disabled bool
	last     time.Time // time of the last plain line or bar frame
	now      func() time.Time
	pending  int64  // bar: units not drawn yet (we throttle; the bar itself does not)
	msg      string // bar: latest description
}

// barEvery is the shortest gap between two bar frames.
const barEvery = 100 * time.Millisecond

// plainEvery is the longest gap between two plain progress lines.
const plainEvery = 10 * time.Second

// Stderr starts a progress report for total units of work on stderr, as a bar when
// stderr is a terminal.
func Stderr(total int64, label string, quiet bool) *Reporter {
	return New(os.Stderr, term.IsTerminal(int(os.Stderr.Fd())), total, label, quiet)
}

// New starts a progress report for total units of work on w, as a bar when bar is
// set.
func New(w io.Writer, bar bool, total int64, label string, quiet bool) *Reporter {
	p := &Reporter{total: total, label: label, w: w, disabled: quiet, now: time.Now}
	if quiet {
		return p
	}
	if bar {
		p.bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(label),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionThrottle(0), // Add throttles, drawing label and count together
		)
		return p
	}
	p.last = p.now()
	p.every = total / 10
	if p.every < 1 {
		p.every = 1
	}
	return p
}

// Add advances the report by n units; msg (may be empty) describes the state after
// them (the bar's label and its counter always show the same step).
func (p *Reporter) Add(n int64, msg string) {
	if p.disabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	prev := p.done
	p.done += n
	if p.bar != nil {
		// Label and counter change in one frame: the description is set and the count
		// added only when a frame is due, so no frame shows a step's label with
		// another step's count.
		p.pending += n
		if msg != "" {
			p.msg = msg
		}
		if now := p.now(); now.Sub(p.last) >= barEvery || p.done >= p.total {
			p.draw()
			p.last = now
		}
		return
	}
	now := p.now()
	if p.done/p.every != prev/p.every || p.done == p.total || now.Sub(p.last) >= plainEvery {
		fmt.Fprintf(p.w, "%s %d/%d %s\n", p.label, p.done, p.total, msg)
		p.last = now
	}
}

// draw shows the pending count and the latest description (p.mu held).
func (p *Reporter) draw() {
	if p.msg != "" && p.done < p.total { // the last Add finishes (and clears) the bar
		p.bar.Describe(p.label + " " + p.msg)
	}
	_ = p.bar.Add64(p.pending)
	p.pending = 0
}

// Logf writes a log line without breaking the bar: the bar is cleared, the line
// written, and the bar drawn again below it.
func (p *Reporter) Logf(format string, a ...any) {
	if p.disabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Clear()
	}
	fmt.Fprintf(p.w, format+"\n", a...)
	if p.bar != nil {
		_ = p.bar.RenderBlank()
	}
}

// Finish closes the progress bar.
func (p *Reporter) Finish() {
	if p.bar != nil {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.pending > 0 {
			p.draw()
		}
		_ = p.bar.Finish()
	}
}

package topview

import (
	"fmt"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/iopath/iopath/aggregate"
)

// Sample is one interval for the terminal UI.
type Sample struct {
	D, Cur *aggregate.Snapshot
	Lost   uint64
	Missed map[string]uint64 // BPF program runs the kernel skipped, since the start
}

// Model is the terminal UI's state (bubbletea): the latest interval, the
// row kind and the sort key, which the keys change.
type Model struct {
	By       By
	Sort     SortKey
	Title    string // what is traced
	Interval time.Duration
	last     *Sample
	height   int
	quit     func() // called once when the user quits
}

// NewModel returns the UI's model; quit is called when the user presses q
// or Ctrl-C.
func NewModel(by By, k SortKey, title string, interval time.Duration, quit func()) *Model {
	return &Model{By: by, Sort: k, Title: title, Interval: interval, quit: quit, height: 40}
}

// Init starts nothing: samples come through Program.Send.
func (m *Model) Init() tea.Cmd { return nil }

// Update handles keys, window sizes and samples.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		switch msg.String() {
		case "q", "ctrl+c", "esc":
			if m.quit != nil {
				m.quit()
				m.quit = nil
			}
			return m, tea.Quit
		case "f", "tab":
			if m.By == ByProcess {
				m.By = ByFile
			} else {
				m.By = ByProcess
			}
		case "s":
			i := slices.Index(SortKeys, m.Sort)
			m.Sort = SortKeys[(i+1)%len(SortKeys)]
		case "d":
			m.Sort = SortDisk
		case "c":
			m.Sort = SortCalls
		case "l":
			m.Sort = SortLatency
		case "t":
			m.Sort = SortThrottle
		}
	case tea.WindowSizeMsg:
		m.height = msg.Height
	case *Sample:
		m.last = msg
	}
	return m, nil
}

var (
	titleStyle = lipgloss.NewStyle().Bold(true).Reverse(true)
	helpStyle  = lipgloss.NewStyle().Faint(true)
)

// View draws the latest interval on the alternate screen.
func (m *Model) View() tea.View {
	v := tea.NewView(m.text())
	v.AltScreen = true
	return v
}

func (m *Model) text() string {
	head := titleStyle.Render(fmt.Sprintf(" iopath top: %s, every %s, %s view, sorted by %s ", m.Title, m.Interval, m.By, m.Sort))
	help := helpStyle.Render("f/tab: processes ↔ files   s: next sort (d disk, c calls, l p99 of the slowest op, t throttle)   q: quit")
	if m.last == nil {
		return head + "\n(waiting for the first interval)\n" + help + "\n"
	}
	rows := max(m.height-12, 3)
	body := Table(m.last.D, m.last.Cur, m.By, m.Sort, rows)
	if m.last.Lost > 0 {
		body += fmt.Sprintf("lost events: %d\n", m.last.Lost)
	}
	body += MissedLine(m.last.Missed)
	return strings.Join([]string{head, body, help}, "\n") + "\n"
}

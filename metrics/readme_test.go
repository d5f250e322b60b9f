package metrics

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEListsMetrics: every metric's name and help text is in the
// README's table, as the code has them.
func TestREADMEListsMetrics(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, m := range All {
		row := "| `" + m.Name + "` | " + m.Kind + " | " + strings.Join(m.Labels, ", ") + " | " + m.Help + " |"
		if !strings.Contains(readme, row) {
			t.Errorf("README.md lacks the row\n%s", row)
		}
	}
}

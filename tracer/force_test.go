package tracer

import (
	"strings"
	"testing"
)

func TestParseForce(t *testing.T) {
	h := Hooks()[0].Name
	m, err := ParseForce(map[string]string{"*": "tp_btf", h: "kprobe"})
	if err != nil || m["*"] != TPBTF || m[h] != Kprobe || len(m) != 2 {
		t.Errorf("ParseForce = %v, %v", m, err)
	}
	for force, want := range map[string]string{
		"nosuchhook": `--force-mechanism: unknown hook "nosuchhook": use * or one of ` + h,
		h:            "--force-mechanism " + h + "=uprobe: unknown mechanism: use fentry, kprobe, tp_btf or tracepoint",
	} {
		if _, err := ParseForce(map[string]string{force: "uprobe"}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseForce(%s=uprobe) = %v, want %q", force, err, want)
		}
	}
}

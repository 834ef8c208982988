package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestWriteChart(t *testing.T) {
	var a, b []time.Duration
	for i := 1; i <= 1000; i++ {
		a = append(a, time.Duration(i)*10*time.Microsecond)
		b = append(b, time.Duration(i)*200*time.Microsecond)
	}
	out := filepath.Join(t.TempDir(), "c.png")
	if d := os.Getenv("CHART_OUT"); d != "" {
		out = d
	}
	if err := writeChart(out, []curve{{"ceiling-alo", a}, {"weir-cont-eos", b}}); err != nil {
		t.Fatal(err)
	}
}

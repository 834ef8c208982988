package main

import (
	"testing"
	"time"
)

// TestMurmur2MatchesJava checks keyPartition against vectors of the Java
// client's partitioner (internal/kafka/murmur2_test.go's).
func TestMurmur2MatchesJava(t *testing.T) {
	for _, v := range []struct {
		key   string
		hash  int32
		mod12 int32
	}{{"", 275646681, 9}, {"a", -1563381124, 4}, {"21", -973932308, 0}, {"abcd", -1323649548, 8},
		{"hello world", 1221641059, 7}, {"weir-key-0001", -1902596673, 11}} {
		if h := murmur2([]byte(v.key)); h != v.hash {
			t.Errorf("murmur2(%q) = %d, want %d", v.key, h, v.hash)
		}
		if p := keyPartition(v.key, 12); p != v.mod12 {
			t.Errorf("keyPartition(%q, 12) = %d, want %d", v.key, p, v.mod12)
		}
	}
}

// TestMeasure: a partition silent for 3 s after the event pauses 3 s; one
// that never moves again pauses the whole window and is stuck; the others
// pause by their arrival spacing.
func TestMeasure(t *testing.T) {
	at := time.Unix(1000, 0)
	var arr [pausePartitions][]time.Time
	for p := range arr {
		for k := -10; k < 100; k++ {
			arr[p] = append(arr[p], at.Add(time.Duration(k)*100*time.Millisecond))
		}
	}
	arr[0] = nil
	for k := 30; k < 100; k++ {
		arr[0] = append(arr[0], at.Add(time.Duration(k)*100*time.Millisecond))
	}
	arr[1] = arr[1][:5] // before the event only
	r := measure(arr, "kill", at, 10*time.Second)
	if r.max() != 10*time.Second || r.stuck != 1 {
		t.Fatalf("max %s stuck %d, want 10s and 1", r.max(), r.stuck)
	}
	if r.pauses[len(r.pauses)-2] != 3*time.Second {
		t.Fatalf("second longest %s, want 3s", r.pauses[len(r.pauses)-2])
	}
	if r.p50() != 100*time.Millisecond {
		t.Fatalf("p50 %s, want 100ms", r.p50())
	}
	if r.resumed != 10*time.Second {
		t.Fatalf("resumed %s, want 10s", r.resumed)
	}
	if len(r.rate) != 65 || r.rate[20] != float64(pausePartitions-2)*10 {
		t.Fatalf("rate bins %d, bin 20 %v", len(r.rate), r.rate[20])
	}
}

package conformance

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// BuildOracle compiles the Kafka Streams oracle in dir (conformance/kstreams)
// with Maven, unless its build is newer than its sources, and returns the
// java class path to run it with.
func BuildOracle(dir string) (string, error) {
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("conformance: the Kafka Streams oracle needs %s on PATH", tool)
		}
	}
	if stale(dir) {
		cmd := exec.Command("mvn", "-q", "-B", "-DskipTests", "package")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("conformance: mvn package in %s: %v\n%s", dir, err, out)
		}
	}
	cp, err := os.ReadFile(filepath.Join(dir, "target", "classpath.txt"))
	if err != nil {
		return "", fmt.Errorf("conformance: the oracle's class path: %w", err)
	}
	abs, err := filepath.Abs(filepath.Join(dir, "target", "classes"))
	if err != nil {
		return "", err
	}
	return abs + string(os.PathListSeparator) + strings.TrimSpace(string(cp)), nil
}

// RunOracle runs the scripts at paths through Kafka Streams in one JVM and
// returns each script's output records, by path.
func RunOracle(classpath string, paths []string) (map[string][]Output, error) {
	cmd := exec.Command("java", append([]string{"-cp", classpath, "weirconformance.Oracle"}, paths...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	res := make(map[string][]Output, len(paths))
	for _, p := range paths {
		res[p] = []Output{}
	}
	var errs []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Output
			Script string `json:"script"`
			Error  string `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, fmt.Errorf("conformance: oracle printed %q: %w", sc.Text(), err)
		}
		if line.Error != "" {
			errs = append(errs, line.Script+": "+line.Error)
			delete(res, line.Script)
			continue
		}
		res[line.Script] = append(res[line.Script], line.Output)
	}
	if len(errs) > 0 || runErr != nil {
		return res, fmt.Errorf("conformance: the oracle failed: %v %s\n%s", runErr, strings.Join(errs, "\n"), lastLines(stderr.String(), 20))
	}
	return res, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// stale reports whether the oracle's build (target/classpath.txt, written
// last) is missing or older than pom.xml or a source file.
func stale(dir string) bool {
	built, err := os.Stat(filepath.Join(dir, "target", "classpath.txt"))
	if err != nil {
		return true
	}
	newer := false
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || newer {
			return err
		}
		if d.IsDir() && d.Name() == "target" {
			return filepath.SkipDir
		}
		if info, err := d.Info(); err == nil && !d.IsDir() && info.ModTime().After(built.ModTime()) {
			newer = true
		}
		return nil
	})
	return newer
}

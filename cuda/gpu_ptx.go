package cuda

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// ptxEntryParams reads the kernel signatures of a PTX module: for every .entry, the
// byte size of each parameter in order. The GPU driver uses it to check a launch's
// argument count before cuLaunchKernel, which reads as many parameters as the kernel
// declares and cannot tell that the caller passed fewer.
func ptxEntryParams(ptx string) (map[string][]int, error) {
	entries := map[string][]int{}
	sc := bufio.NewScanner(strings.NewReader(ptx))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	var (
		cur    string // entry whose parameter list is open, "" outside one
		params []int
		line   int
	)
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if cur == "" {
			i := strings.Index(text, ".entry ")
			if i < 0 || strings.HasPrefix(text, "//") {
				continue
			}
			rest := strings.TrimSpace(text[i+len(".entry "):])
			open := strings.IndexByte(rest, '(')
			if open <= 0 {
				return nil, fmt.Errorf("ptx line %d: cannot read the entry %q", line, text)
			}
			cur, params = strings.TrimSpace(rest[:open]), nil
			text = rest[open+1:]
		}
		// Inside a parameter list: ".param .u32 name," lines, then ")".
		for _, field := range strings.Split(text, ",") {
			field = strings.TrimSpace(field)
			closing := strings.HasPrefix(field, ")") || strings.HasSuffix(field, ")")
			field = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(field, ")"), ")"))
			if field != "" {
				size, err := ptxParamSize(field)
				if err != nil {
					return nil, fmt.Errorf("ptx line %d (entry %s): %w", line, cur, err)
				}
				params = append(params, size)
			}
			if closing {
				if _, dup := entries[cur]; dup {
					return nil, fmt.Errorf("ptx line %d: entry %s declared twice", line, cur)
				}
				entries[cur] = params
				cur = ""
				break
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("ptx: %w", err)
	}
	if cur != "" {
		return nil, fmt.Errorf("ptx: the parameter list of entry %s is not closed", cur)
	}
	return entries, nil
}

// ptxParamSize returns the byte size of a kernel parameter declaration such as
// ".param .u64 k_param_3", ".param .u64 .ptr .global .align 4 k_param_1" or
// ".param .align 8 .b8 k_param_0[16]".
func ptxParamSize(decl string) (int, error) {
	f := strings.Fields(decl)
	if len(f) < 3 || f[0] != ".param" {
		return 0, fmt.Errorf("not a parameter declaration: %q", decl)
	}
	name := f[len(f)-1]
	if strings.HasPrefix(name, ".") {
		return 0, fmt.Errorf("parameter without a name: %q", decl)
	}
	bits := 0
	for i := 1; i < len(f)-1; i++ {
		tok := f[i]
		if tok == ".align" {
			i++ // skip its operand
			continue
		}
		if len(tok) < 3 || !strings.ContainsRune("usfb", rune(tok[1])) {
			continue // .ptr, .global, ... qualifiers
		}
		n, err := strconv.Atoi(tok[2:])
		if err != nil || n <= 0 || n%8 != 0 {
			continue
		}
		if bits != 0 {
			return 0, fmt.Errorf("two types in %q", decl)
		}
		bits = n
	}
	if bits == 0 {
		return 0, fmt.Errorf("no parameter type in %q", decl)
	}
	size := bits / 8
	if i := strings.IndexByte(name, '['); i >= 0 {
		n, err := strconv.Atoi(strings.TrimSuffix(name[i+1:], "]"))
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("bad array length in %q", decl)
		}
		size *= n
	}
	return size, nil
}

// checkLaunchArgs checks a launch's 8-byte argument slots against the kernel's PTX
// signature.
func checkLaunchArgs(name string, sizes []int, nargs int) error {
	if nargs != len(sizes) {
		return fmt.Errorf("kernel %s takes %d arguments, got %d", name, len(sizes), nargs)
	}
	for i, s := range sizes {
		if s > 8 {
			return fmt.Errorf("kernel %s: parameter %d is %d bytes; launch arguments are 8-byte slots", name, i, s)
		}
	}
	return nil
}

// jitLog is the text a driver wrote into a JIT log buffer: up to the first NUL,
// without surrounding blank space.
func jitLog(buf []byte) string {
	if i := bytes.IndexByte(buf, 0); i >= 0 {
		buf = buf[:i]
	}
	return strings.TrimSpace(string(buf))
}

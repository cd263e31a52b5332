package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
)

// Profiling for performance work (docs/dev/performance.md): with
// OMNIGRAPH_CPUPROFILE set, the command's CPU profile is written to that
// file; with OMNIGRAPH_MEMPROFILE, its allocation profile when it ends.
// Neither changes what the command does; a file that cannot be written is
// reported on stderr and the command runs unprofiled.
const (
	envCPUProfile = "OMNIGRAPH_CPUPROFILE"
	envMemProfile = "OMNIGRAPH_MEMPROFILE"
)

// startProfiles starts the profiles the environment asks for and returns
// the function that writes them.
func startProfiles(stderr io.Writer) func() {
	var stops []func()
	if path := os.Getenv(envCPUProfile); path != "" {
		f, err := os.Create(path)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v (the command runs without it)\n", envCPUProfile, err)
		} else {
			stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
		}
	}
	if path := os.Getenv(envMemProfile); path != "" {
		stops = append(stops, func() {
			f, err := os.Create(path)
			if err == nil {
				err = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
			if err != nil {
				fmt.Fprintf(stderr, "%s: %v\n", envMemProfile, err)
			}
		})
		runtime.MemProfileRate = 512 << 10
	}
	return func() {
		for _, stop := range stops {
			stop()
		}
	}
}

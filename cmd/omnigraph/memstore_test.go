package main

// The in-process CLI tests run many commands in one process, so mem://
// stores outlive a command there; the binary refuses them.
func init() { processLocalStores = true }

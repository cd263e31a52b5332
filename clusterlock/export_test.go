package clusterlock

import "os"

func osPID() int { return os.Getpid() }

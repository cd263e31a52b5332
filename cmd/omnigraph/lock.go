package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/omnigraph-go/omnigraph/backend"
	"github.com/omnigraph-go/omnigraph/clusterlock"
	"github.com/omnigraph-go/omnigraph/graph"
	"github.com/omnigraph-go/omnigraph/manifest"
)

// exitLockHeld is the exit code of a write or maintenance command refused
// because another process holds the graph's cluster lock (state_lock_held).
const exitLockHeld = 3

// lockPollInterval is how often --wait retries a held lock. Each poll costs
// one conditional create and one read.
const lockPollInterval = 200 * time.Millisecond

// releaseTimeout bounds the release of the lock at the end of a command,
// which runs on a fresh context so that Ctrl-C / SIGTERM, having cancelled
// the write, still lets the lock go.
const releaseTimeout = 10 * time.Second

// afterWriteOpen, when set (tests only), runs once a locking command has
// opened its graph read-write, with the command's context.
var afterWriteOpen func(ctx context.Context, g *graph.Graph)

func (t *graphTarget) addWait(c *cobra.Command) {
	c.Flags().DurationVar(&t.wait, "wait", 0, "wait up to DURATION (e.g. 30s) for another CLI writer's cluster lock instead of refusing at once (never waits for a server)")
}

// lockOptions are the cluster lock options of this invocation.
func (t *graphTarget) lockOptions(ctx context.Context, op string) clusterlock.Options {
	o := clusterlock.Options{
		Operation:     op,
		Wait:          t.wait,
		PollInterval:  lockPollInterval,
		StoreURL:      backend.Redact(t.store),
		BinaryVersion: cliVersion(),
		Logger:        loggerFrom(ctx),
	}
	return o
}

// acquireLock takes the graph's unleased cluster lock for operation op
// after checking, without writing, that store holds a graph: a write to a
// location without one fails as before and leaves nothing behind. A store
// without conditional create cannot carry the lock; the read-write open
// refuses it anyway, so it is left to that. The returned release is never
// nil and uses a fresh context (see releaseTimeout).
func (t *graphTarget) acquireLock(ctx context.Context, store backend.StorageAdapter, op string) (release func() error, err error) {
	nothing := func() error { return nil }
	if !store.Capabilities().ConditionalCreate {
		return nothing, nil
	}
	exists, err := manifest.New(store).Exists(ctx)
	if err != nil {
		return nil, fmt.Errorf("check for a graph: %w", err)
	}
	if !exists {
		return nil, graph.ErrNoGraph
	}
	l, err := clusterlock.Acquire(ctx, store, t.lockOptions(ctx, op))
	if err != nil {
		if errors.Is(err, clusterlock.ErrLockHeld) {
			return nil, exitCodeError{code: exitLockHeld, err: servedAdvice(err)}
		}
		return nil, err
	}
	return func() error {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		defer cancel()
		return l.Release(rctx)
	}, nil
}

// openWriteGraph takes the cluster lock for op and then opens the graph
// read-write, so the open's recovery sweep, the writes' heal and the write
// itself run only while this process holds the lock. done closes the
// graph, releases the lock and closes the store; errp, when not nil, gets
// a release failure if the command itself succeeded.
func (t *graphTarget) openWriteGraph(ctx context.Context, op string, open func(context.Context, backend.StorageAdapter) (*graph.Graph, error)) (*graph.Graph, func(errp *error), error) {
	store, err := t.openStore(ctx)
	if err != nil {
		return nil, nil, err
	}
	release, err := t.acquireLock(ctx, store, op)
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	g, err := open(ctx, store)
	if err != nil {
		if rerr := release(); rerr != nil {
			err = errors.Join(err, releaseErr(rerr))
		}
		store.Close()
		return nil, nil, err
	}
	if afterWriteOpen != nil {
		afterWriteOpen(ctx, g)
	}
	return g, func(errp *error) {
		g.Close()
		rerr := release()
		store.Close()
		if rerr != nil && errp != nil && *errp == nil {
			*errp = releaseErr(rerr)
		}
	}, nil
}

func releaseErr(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("the command finished but releasing the cluster lock failed (see 'omnigraph lock status'): %w", err)
}

// openWrite is openWriteGraph with the ordinary read-write open.
func (t *graphTarget) openWrite(ctx context.Context, op string) (*graph.Graph, func(errp *error), error) {
	pol, err := t.blobPolicy()
	if err != nil {
		return nil, nil, err
	}
	return t.openWriteGraph(ctx, op, func(ctx context.Context, s backend.StorageAdapter) (*graph.Graph, error) {
		// The cluster lock is held for the handle's life: it is the only
		// writer, so it may trust its own publishes.
		return graph.Open(ctx, s, graph.OpenOptions{Actor: t.actor, ExclusiveWriter: true, ExternalBlobs: pol})
	})
}

// cliVersion is the module version of this binary ("(devel)" when built
// from a work tree), recorded as the lock holder's binary version.

func init() {
	register(func(a *app) *cobra.Command {
		c := &cobra.Command{
			Use:   "lock",
			Short: "Inspect and release the graph's cluster lock (the writer fence)",
			Args:  cobra.NoArgs,
		}
		c.AddCommand(lockStatusCmd(a), lockUnlockCmd(a))
		return c
	})
}

// lockStatusJSON is the --json output of lock status.
type lockStatusJSON struct {
	Held          bool               `json:"held"`
	LockID        string             `json:"lock_id,omitempty"`
	Operation     string             `json:"operation,omitempty"`
	Owner         *clusterlock.Owner `json:"owner,omitempty"`
	CreatedAt     *time.Time         `json:"created_at,omitempty"`
	AgeSeconds    float64            `json:"age_seconds,omitempty"`
	Leased        bool               `json:"leased"`
	LeaseSeconds  int                `json:"lease_seconds,omitempty"`
	LastHeartbeat *time.Time         `json:"last_heartbeat,omitempty"`
	HeartbeatSeq  uint64             `json:"heartbeat_seq,omitempty"`
	HolderGone    bool               `json:"holder_gone"`
	UnknownFormat bool               `json:"unknown_format,omitempty"`
	UnlockCommand string             `json:"unlock_command,omitempty"`
}

func lockStatusCmd(a *app) *cobra.Command {
	var t graphTarget
	c := &cobra.Command{
		Use:   "status --store URL",
		Short: "Show who holds the graph's cluster lock (changes nothing)",
		Long: "Show the graph's cluster lock: the lock id, the operation it is held for, the\n" +
			"holder (host, pid, binary version), its age, whether it is a server's leased\n" +
			"lock and that lock's last heartbeat, whether the holder process is gone (a\n" +
			"holder on this host whose pid no longer runs, on any store), and the exact\n" +
			"unlock command. Prints \"not held\" when the lock is free. Changes nothing.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			ctx := c.Context()
			store, err := t.openStore(ctx)
			if err != nil {
				return err
			}
			defer store.Close()
			o := t.lockOptions(ctx, "")
			st, err := clusterlock.Status(ctx, store, o)
			if err != nil {
				return err
			}
			out := lockStatusJSON{Held: st.Held, Leased: st.Leased, HolderGone: st.HolderGone, UnknownFormat: st.UnknownFormat}
			if st.Held {
				h := st.Holder
				out.LockID, out.Operation, out.LeaseSeconds = h.LockID, h.Operation, st.LeaseSeconds
				out.Owner = &h.Owner
				if !h.CreatedAt.IsZero() {
					ca := h.CreatedAt
					out.CreatedAt, out.AgeSeconds = &ca, st.Age.Seconds()
				}
				if !st.LastHeartbeat.IsZero() {
					lh := st.LastHeartbeat
					out.LastHeartbeat, out.HeartbeatSeq = &lh, st.HeartbeatSeq
				}
				if !st.UnknownFormat {
					out.UnlockCommand = clusterlock.UnlockCommand(h.LockID, o.StoreURL)
				}
			}
			if t.json {
				return writeJSON(a.stdout, out)
			}
			printLockStatus(a, out, st)
			return nil
		},
	}
	t.addStore(c)
	t.addJSON(c)
	return c
}

func printLockStatus(a *app, out lockStatusJSON, st clusterlock.LockStatus) {
	if !out.Held {
		fmt.Fprintln(a.stdout, "cluster lock: not held")
		return
	}
	if out.UnknownFormat {
		fmt.Fprintf(a.stdout, "cluster lock: held (lock id %s), in record format %d, which this omnigraph does not know; use the binary that wrote it\n", dash(out.LockID), st.Holder.FormatVersion)
		return
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "cluster lock:\theld")
	fmt.Fprintf(tw, "lock id:\t%s\n", out.LockID)
	fmt.Fprintf(tw, "operation:\t%s\n", dash(out.Operation))
	fmt.Fprintf(tw, "holder:\t%s\n", st.Holder.Owner)
	if out.CreatedAt != nil {
		fmt.Fprintf(tw, "taken:\t%s (%s ago)\n", out.CreatedAt.UTC().Format(time.RFC3339), st.Age.Round(time.Second))
	}
	if out.Leased {
		fmt.Fprintf(tw, "leased:\tyes, lease %d s (a server's lock)\n", out.LeaseSeconds)
		if out.LastHeartbeat != nil {
			fmt.Fprintf(tw, "last heartbeat:\t%s (#%d, %s ago)\n", out.LastHeartbeat.UTC().Format(time.RFC3339), out.HeartbeatSeq, time.Since(*out.LastHeartbeat).Round(time.Second))
		} else {
			fmt.Fprintln(tw, "last heartbeat:\tnone yet")
		}
	} else {
		fmt.Fprintln(tw, "leased:\tno (a CLI writer's lock; no heartbeats)")
	}
	if out.HolderGone {
		fmt.Fprintln(tw, "holder gone:\tyes")
	}
	tw.Flush()
	fmt.Fprintln(a.stdout, clusterlock.Advice(out.HolderGone, out.UnlockCommand))
}

func lockUnlockCmd(a *app) *cobra.Command {
	var t graphTarget
	var id string
	c := &cobra.Command{
		Use:   "unlock --id EXACT_ID --store URL",
		Short: "Release the graph's cluster lock by its exact lock id",
		Long: "Release the cluster lock whose lock id is exactly --id (see 'omnigraph lock status'\n" +
			"or the state_lock_held message). A different id is refused and changes nothing,\n" +
			"as does a lock that is not held. Only unlock a lock whose holder is gone: the\n" +
			"holder of an unlocked lock keeps writing. Unlocking a server's leased lock makes\n" +
			"that server stop at its next heartbeat.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			ctx := c.Context()
			if id == "" {
				return usageError{msg: "--id EXACT_ID is required: the lock id 'omnigraph lock status' shows", hint: seeHelp(c)}
			}
			store, err := t.openStore(ctx)
			if err != nil {
				return err
			}
			defer store.Close()
			if err := clusterlock.Unlock(ctx, store, id, t.lockOptions(ctx, "")); err != nil {
				return err
			}
			if t.json {
				return writeJSON(a.stdout, map[string]any{"lock_id": id, "unlocked": true})
			}
			fmt.Fprintf(a.stdout, "released cluster lock %s\n", id)
			return nil
		},
	}
	c.Flags().StringVar(&id, "id", "", "the exact lock id to release (required)")
	t.addStore(c)
	t.addJSON(c)
	return c
}

// servedAdvice adds to a held lock whose holder is 'omnigraph serve' how
// to write anyway: through that server. Unlocking (where the held message
// ends) is for a holder that is gone, not for a live server.
func servedAdvice(err error) error {
	var he *clusterlock.HeldError
	if !errors.As(err, &he) || he.Holder.Operation != "serve" {
		return err
	}
	where := he.Holder.Owner.Host
	if where == "" {
		where = "its host"
	}
	return fmt.Errorf("%w. This graph is served by 'omnigraph serve' on %s: send the write through it with --server URL (with --token TOKEN or %s)", err, where, envToken)
}

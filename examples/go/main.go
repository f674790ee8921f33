// Command kplace-go-example drives kplace serve (kplace.v1.Placement) from Go: Reset, a
// DRY_RUN Schedule, and the cluster read back through SnapshotStream.
//
// The stubs are generated from proto/kplace/v1/placement.proto with Debian's protoc-gen-go
// and protoc-gen-go-grpc (docs/serve.md, "Clients"; tests/examples/examples_test.py builds it).
//
//	kplace-go-example [-target 127.0.0.1:7450] [-cluster examples/cluster.json] [-pods examples/pods.json] [-max-chunk-bytes N]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	kplacev1 "kplace/proto/kplace/v1"
)

func main() {
	target := flag.String("target", "127.0.0.1:7450", "kplace serve's address (--listen)")
	cluster := flag.String("cluster", "examples/cluster.json", "the cluster: a Kubernetes List of nodes and pods")
	pods := flag.String("pods", "examples/pods.json", "pending pods to dry-run")
	chunkBytes := flag.Int("max-chunk-bytes", 0, "SnapshotStream's largest chunk (0: the server's 1 MiB; at least 4096)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("kplace-go-example: ")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// WithBlock: wait for a server that is still starting. The streamed Snapshot needs no
	// raised receive limit; the unary calls' replies can grow past gRPC's 4 MiB.
	conn, err := grpc.DialContext(ctx, *target, grpc.WithInsecure(), grpc.WithBlock(),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20)))
	if err != nil {
		log.Fatalf("%s: %v", *target, err)
	}
	defer conn.Close()
	kp := kplacev1.NewPlacementClient(conn)

	reset, err := kp.Reset(ctx, &kplacev1.ResetRequest{Objects: readFile(*cluster)})
	if err != nil {
		log.Fatalf("Reset %s: %v", *cluster, err)
	}
	fmt.Printf("reset: revision %d, %d nodes, %d bound pods, instance %s\n",
		reset.Revision, reset.Nodes, reset.BoundPods, reset.Instance)

	dry, err := kp.Schedule(ctx, &kplacev1.ScheduleRequest{Pods: readFile(*pods), Mode: kplacev1.Mode_DRY_RUN})
	if err != nil {
		log.Fatalf("Schedule %s: %v", *pods, err)
	}
	for _, p := range dry.Placements {
		if p.Node != "" {
			fmt.Printf("dry run: %s -> %s (score %d)\n", p.Pod, p.Node, p.Score)
		} else {
			fmt.Printf("dry run: %s -> %s\n", p.Pod, p.Message)
		}
	}

	revision, items, chunks, err := snapshot(ctx, kp, int32(*chunkBytes))
	if err != nil {
		log.Fatalf("SnapshotStream: %v", err)
	}
	if chunks == 0 {
		fmt.Printf("snapshot: revision %d, %d objects (unary Snapshot: this server has no SnapshotStream)\n", revision, len(items))
	} else {
		fmt.Printf("snapshot: revision %d, %d objects in %d chunks\n", revision, len(items), chunks)
	}
}

// snapshot reads the cluster through SnapshotStream, joining every chunk's List items; a
// server without the stream (UNIMPLEMENTED) is read with the unary Snapshot (0 chunks).
func snapshot(ctx context.Context, kp kplacev1.PlacementClient, chunkBytes int32) (uint64, []json.RawMessage, int, error) {
	stream, err := kp.SnapshotStream(ctx, &kplacev1.SnapshotRequest{MaxChunkBytes: chunkBytes})
	if err != nil {
		return 0, nil, 0, err
	}
	var items []json.RawMessage
	var revision uint64
	for n := 0; ; n++ {
		chunk, err := stream.Recv()
		if status.Code(err) == codes.Unimplemented && n == 0 {
			whole, err := kp.Snapshot(ctx, &kplacev1.SnapshotRequest{})
			if err != nil {
				return 0, nil, 0, err
			}
			items, err := listItems(whole.Objects)
			return whole.Revision, items, 0, err
		}
		if err == io.EOF {
			return 0, nil, n, fmt.Errorf("the stream ended after %d chunks, none marked last", n)
		}
		if err != nil {
			return 0, nil, n, err
		}
		if n > 0 && chunk.Revision != revision {
			return 0, nil, n, fmt.Errorf("chunk %d: revision %d, chunk 0 was %d", n, chunk.Revision, revision)
		}
		revision = chunk.Revision
		more, err := listItems(chunk.Objects)
		if err != nil {
			return 0, nil, n, fmt.Errorf("chunk %d: %v", n, err)
		}
		items = append(items, more...)
		if chunk.Last {
			return revision, items, n + 1, nil
		}
	}
}

func listItems(objects string) ([]json.RawMessage, error) {
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal([]byte(objects), &list); err != nil {
		return nil, fmt.Errorf("objects: not a List: %v", err)
	}
	return list.Items, nil
}

func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	return string(b)
}

// A franz-go kfake cluster on one loopback port, for bench/ and kcoord check comparisons.
// Prints HOST:PORT on stdout once it listens, and runs until stdin closes.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 0, "listen port (0: any free one)")
	flag.Parse()
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(*port)}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfake:", err)
		os.Exit(1)
	}
	defer c.Close()
	fmt.Println(c.ListenAddrs()[0])
	io.Copy(io.Discard, os.Stdin)
}

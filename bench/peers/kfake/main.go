// A franz-go kfake cluster on loopback (one broker unless -brokers), for bench/ and kcoord check comparisons.
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
	port := flag.Int("port", 0, "listen port (0: any free one); with -brokers N, N ports from it")
	brokers := flag.Int("brokers", 1, "how many brokers")
	flag.Parse()
	ports := make([]int, *brokers)
	for i := range ports {
		if *port != 0 {
			ports[i] = *port + i
		}
	}
	opts := []kfake.Opt{kfake.NumBrokers(*brokers), kfake.Ports(ports...)}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfake:", err)
		os.Exit(1)
	}
	defer c.Close()
	fmt.Println(c.ListenAddrs()[0])
	io.Copy(io.Discard, os.Stdin)
}

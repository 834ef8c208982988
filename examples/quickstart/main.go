// Command quickstart is the program of the repository's README: a word
// count whose counts every instance answers over HTTP.
//
// It needs a Kafka broker on localhost:9092 (bash scripts/kafka/start.sh
// starts one) with the topics "text" and "word-counts" (weir creates its
// internal topics, not these). Start it twice, each with its own
// -state-dir and -http, and the two instances share the partitions; ask
// either one for any word (GET /stores/counts/keys/{word}). The examples
// wordcount and dashboard do the same on an embedded broker.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"strings"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

func main() {
	stateDir := flag.String("state-dir", "/tmp/wordcount-1", "local state: one directory per instance")
	httpAddr := flag.String("http", "127.0.0.1:8080", "serves GET /stores/counts/keys/{word}")
	flag.Parse()
	b := topology.NewBuilder()
	lines := topology.NewStream(b, "text", serde.String(), serde.String())
	words := topology.FlatMapValues(lines, strings.Fields)
	topology.GroupBy(words, func(_, w string) string { return w }).
		Count(topology.Materialized("counts")). // a queryable store
		ToStream().To("word-counts")
	topo, err := b.Build() // every mistake reported at once
	if err != nil {
		log.Fatal(err)
	}
	app, err := weir.New(topo,
		weir.WithBrokers("localhost:9092"),
		weir.WithApplicationID("wordcount"), // the consumer group: instances share its partitions
		weir.WithStateDir(*stateDir),
		weir.WithHTTP(*httpAddr),
	)
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := app.Run(ctx); err != nil { // until Ctrl-C; a graceful stop commits what was processed
		log.Fatal(err)
	}
}

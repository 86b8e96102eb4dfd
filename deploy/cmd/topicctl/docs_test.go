package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"blockspace.exchange/topics"
)

// docsDir is the repository's docs directory, two modules up from here.
var docsDir = filepath.Join("..", "..", "..", "docs")

// asyncAPI is the part of an AsyncAPI 3.0 document the checks read.
type asyncAPI struct {
	AsyncAPI string `yaml:"asyncapi"`
	Channels map[string]struct {
		Address  string                    `yaml:"address"`
		Messages map[string]map[string]any `yaml:"messages"`
		Bindings struct {
			Kafka struct {
				Topic      string         `yaml:"topic"`
				Partitions int32          `yaml:"partitions"`
				Config     map[string]any `yaml:"topicConfiguration"`
			} `yaml:"kafka"`
		} `yaml:"bindings"`
	} `yaml:"channels"`
	Components struct {
		Messages map[string]struct {
			Name string `yaml:"name"`
		} `yaml:"messages"`
	} `yaml:"components"`
}

func readAsyncAPI(t *testing.T) asyncAPI {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(docsDir, "asyncapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc asyncAPI
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("parse docs/asyncapi.yaml: %v", err)
	}
	if doc.AsyncAPI != "3.0.0" {
		t.Fatalf("asyncapi version %q, want 3.0.0", doc.AsyncAPI)
	}
	return doc
}

// TestAsyncAPINamesTheCatalog keeps docs/asyncapi.yaml in step with the
// topics module: the same topics with the same partitions and configs, and
// on each channel the same message types.
func TestAsyncAPINamesTheCatalog(t *testing.T) {
	doc := readAsyncAPI(t)
	var docTopics, catalogTopics []string
	byAddress := map[string]string{}
	for id, ch := range doc.Channels {
		docTopics = append(docTopics, ch.Address)
		byAddress[ch.Address] = id
	}
	for _, topic := range topics.Catalog() {
		catalogTopics = append(catalogTopics, topic.Name)
	}
	sort.Strings(docTopics)
	sort.Strings(catalogTopics)
	if !slices.Equal(docTopics, catalogTopics) {
		t.Fatalf("asyncapi channels %v\ncatalog topics   %v", docTopics, catalogTopics)
	}
	for _, topic := range topics.Catalog() {
		ch := doc.Channels[byAddress[topic.Name]]
		kafka := ch.Bindings.Kafka
		if kafka.Topic != topic.Name || kafka.Partitions != topic.Partitions {
			t.Errorf("%s binding says topic %q with %d partitions", topic.Name, kafka.Topic, kafka.Partitions)
		}
		if policy, _ := kafka.Config["cleanup.policy"].([]any); len(policy) != 1 || policy[0] != string(topic.Cleanup) {
			t.Errorf("%s cleanup.policy %v, want [%s]", topic.Name, kafka.Config["cleanup.policy"], topic.Cleanup)
		}
		configs := topic.Configs()
		for name, want := range configs {
			if got, ok := kafka.Config[name]; name != "cleanup.policy" && (!ok || fmt.Sprint(got) != want) {
				t.Errorf("%s %s is %v in asyncapi, %s in the catalog", topic.Name, name, got, want)
			}
		}
		for name := range kafka.Config {
			if _, ok := configs[name]; !ok {
				t.Errorf("%s %s is in asyncapi, not in the catalog", topic.Name, name)
			}
		}
		var names []string
		for id := range ch.Messages {
			names = append(names, doc.Components.Messages[id].Name)
		}
		sort.Strings(names)
		want := slices.Clone(topic.Types)
		sort.Strings(want)
		if !slices.Equal(names, want) {
			t.Errorf("%s carries %v in asyncapi, %v in the catalog", topic.Name, names, want)
		}
	}
}

// TestTopicsDocMentionsEveryTopicAndType guards docs/topics.md against a
// catalog change that was not written down.
func TestTopicsDocMentionsEveryTopicAndType(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(docsDir, "topics.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, topic := range topics.Catalog() {
		if !strings.Contains(doc, "### `"+topic.Name+"`") {
			t.Errorf("docs/topics.md has no section for %s", topic.Name)
		}
	}
	for _, m := range topics.MessageTypes() {
		if !strings.Contains(doc, "`"+m.Name+"`") {
			t.Errorf("docs/topics.md does not mention %s", m.Name)
		}
	}
}

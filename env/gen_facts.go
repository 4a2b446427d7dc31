package env

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/mtgrpo/mtgrpo/env/data"
)

// A miniature of the TriviaQA / wiki-search setting: a corpus of facts about invented countries
// (so the model cannot know them: it has to search), and questions whose answers are in exactly
// one passage. The corpus depends only on (corpusSeed, corpusSize); questions are drawn from it
// with the task seed, so generated rows and the environment's index agree.

// Defaults of the generated corpus.
const (
	DefaultCorpusSeed = 7
	DefaultCorpusSize = 100 // countries; 3 passages each
	// MaxCorpusSize is the most countries a corpus can have (Config.Facts.Countries): names are drawn
	// from 20 syllables, 8000 names of three, and each country takes three.
	MaxCorpusSize = 2000
)

var (
	syllables = []string{"bar", "vel", "to", "ri", "an", "dor", "mek", "sa", "lin", "qua", "zor", "el", "pa", "nu", "cas", "thi", "om", "gra", "fen", "u"}
	animals   = []string{"lynx", "heron", "ibex", "otter", "falcon", "tortoise", "marten", "crane", "bison", "gecko", "puffin", "jackal"}
)

// fact is one question with its answer and the passage that holds it.
type fact struct {
	country, question, answer string
}

func inventName(r *rand.Rand, parts int, used map[string]bool) string {
	for {
		var b strings.Builder
		for i := 0; i < parts; i++ {
			b.WriteString(syllables[r.IntN(len(syllables))])
		}
		s := b.String()
		s = strings.ToUpper(s[:1]) + s[1:]
		if !used[s] {
			used[s] = true
			return s
		}
	}
}

// GenerateCorpus builds the facts corpus: per country a passage on its capital, one on its
// founding, one on its nature (3·size documents). WriteCorpus saves it for inspection or for
// Config.CorpusPath.
func GenerateCorpus(seed int64, size int) []Document {
	docs, _ := corpusAndFacts(seed, size)
	return docs
}

// corpusAndFacts builds the corpus and the facts the questions are drawn from. Capitals and
// mountains have names of two syllables up to the default size (the default corpus) and of three
// past it, where two-syllable names (400) would run out.
func corpusAndFacts(seed int64, size int) ([]Document, []fact) {
	r := newRand(seed, "corpus")
	used := map[string]bool{}
	var docs []Document
	var facts []fact
	placeParts := 2
	if size > DefaultCorpusSize {
		placeParts = 3
	}
	for i := 0; i < size; i++ {
		c := inventName(r, 3, used)
		capital := inventName(r, placeParts, used)
		year := 1100 + r.IntN(850)
		animal := animals[r.IntN(len(animals))]
		mountain := "Mount " + inventName(r, placeParts, used)
		height := 1200 + r.IntN(6000)
		docs = append(docs,
			Document{ID: fmt.Sprintf("%s-1", c), Title: c, Text: fmt.Sprintf("%s is a country whose capital city is %s. %s is also its largest city.", c, capital, capital)},
			Document{ID: fmt.Sprintf("%s-2", c), Title: c + " (history)", Text: fmt.Sprintf("%s was founded in the year %d, when the first council met in %s.", c, year, capital)},
			Document{ID: fmt.Sprintf("%s-3", c), Title: c + " (nature)", Text: fmt.Sprintf("The national animal of %s is the %s. Its highest mountain is %s, %d metres tall.", c, animal, mountain, height)},
		)
		facts = append(facts,
			fact{c, fmt.Sprintf("What is the capital of %s?", c), capital},
			fact{c, fmt.Sprintf("In which year was %s founded?", c), fmt.Sprint(year)},
			fact{c, fmt.Sprintf("What is the national animal of %s?", c), animal},
			fact{c, fmt.Sprintf("What is the highest mountain of %s?", c), mountain},
		)
	}
	return docs, facts
}

// WikiQAInstruction is the system prompt of wiki_qa.
var WikiQAInstruction = toolSystemPrompt("search", "give the answer as <answer>...</answer>, for example <answer>Paris</answer>.")

// GenerateWikiQA makes n questions over the generated corpus of the given number of countries.
func GenerateWikiQA(n int, seed int64, countries int) []data.Row {
	return take(n, wikiQAStream(seed, countries))
}

// wikiQAStream makes the same tasks one at a time.
func wikiQAStream(seed int64, countries int) stream {
	_, facts := corpusAndFacts(DefaultCorpusSeed, countries)
	r := newRand(seed, "wiki_qa")
	return func(i int) data.Row {
		f := facts[r.IntN(len(facts))]
		return data.Row{
			DataSource:  "wiki_qa",
			Prompt:      []data.Message{{Role: "user", Content: f.question}},
			Ability:     "qa",
			RewardModel: data.RewardModel{Style: "rule", GroundTruth: f.answer},
			ExtraInfo:   map[string]any{"split": "train", "index": int64(i), "question": f.question},
		}
	}
}

// QARubric scores <answer> tags against the truth, with MT-GRPO's turn rewards.
func QARubric() *Rubric {
	return &Rubric{
		Funcs: []RewardFunc{TagAnswerAccuracy("answer", 1), FormatTagReward("answer", 0)},
		Turn:  []TurnRewardFunc{ToolSuccessTurn(1), AnswerInResultTurn(1)},
	}
}

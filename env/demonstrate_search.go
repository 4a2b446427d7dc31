package env

import (
	"encoding/json"
	"fmt"
	"regexp"
)

// wikiFacts are wiki_qa's questions (gen_facts.go), each with where its answer stands in the
// passage that holds it; %s is the question's country.
var wikiFacts = []struct {
	question *regexp.Regexp
	answer   string
}{
	{regexp.MustCompile(`^What is the capital of (.+)\?$`), `%s is a country whose capital city is ([^.\s]+)\.`},
	{regexp.MustCompile(`^In which year was (.+) founded\?$`), `%s was founded in the year (\d+)`},
	{regexp.MustCompile(`^What is the national animal of (.+)\?$`), `The national animal of %s is the ([^.\s]+)\.`},
	{regexp.MustCompile(`^What is the highest mountain of (.+)\?$`), `The national animal of %s is the [^.\s]+\. Its highest mountain is (Mount [^,\s]+),`},
}

// wikiQuestion is the country a wiki_qa task asks about and the pattern of its answer in a
// passage.
func wikiQuestion(task Task) (country string, answer *regexp.Regexp, err error) {
	q := taskQuestion(task)
	for _, f := range wikiFacts {
		if m := f.question.FindStringSubmatch(q); m != nil {
			return m[1], regexp.MustCompile(fmt.Sprintf(f.answer, regexp.QuoteMeta(m[1]))), nil
		}
	}
	return "", nil, fmt.Errorf("env: wiki_qa task %s: %q is none of the generated questions (capital, founding year, national animal, highest mountain)", task.ID, q)
}

// demonstrateWikiQA searches for the question's country, then answers from the passages the
// search returned (the tool's reply, not the ground truth) in <answer></answer>.
func demonstrateWikiQA(task Task, msgs []Message) (string, error) {
	country, answer, err := wikiQuestion(task)
	if err != nil {
		return "", err
	}
	call, result, ok := lastToolStep(msgs)
	if !ok {
		return toolCallText("search", "query", country), nil
	}
	var args struct {
		Query string `json:"query"`
	}
	if json.Unmarshal(call.Arguments, &args) != nil || args.Query != country {
		return "", fmt.Errorf("env: wiki_qa task %s: the last call %s is not the search for %q", task.ID, call.Arguments, country)
	}
	m := answer.FindStringSubmatch(result)
	if m == nil {
		return "", fmt.Errorf("env: wiki_qa task %s: the search for %q returned no passage with the answer", task.ID, country)
	}
	return "<answer>" + m[1] + "</answer>", nil
}

// directWikiQA answers at once, without searching.
func directWikiQA(task Task, _ []Message) (string, error) {
	return "<answer>" + task.GroundTruth + "</answer>", nil
}

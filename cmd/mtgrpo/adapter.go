package main

import (
	"github.com/mtgrpo/mtgrpo/model"
)

// adapterUsage is the --adapter flag's help, shared by eval and generate.
const adapterUsage = "a LoRA adapter directory (adapter_config.json + adapter_model.safetensors, PEFT's layout or mtgrpo's) " +
	"applied to the model; without --model, its base_model_name_or_path is the model"

// withAdapter checks an --adapter directory's configuration (exit 2 before any work) and names the
// model it applies to: model when given, else the adapter's base (a directory or Hub id, resolved
// by the caller).
func withAdapter(cmd, modelName, adapter string) (string, error) {
	if adapter == "" {
		return modelName, nil
	}
	a, err := model.ReadAdapter(adapter)
	if err != nil {
		return "", usagef("%s: --adapter: %v", cmd, err)
	}
	if modelName != "" {
		return modelName, nil
	}
	if a.Base.NameOrPath == "" {
		return "", usagef("%s: --adapter %s names no base model (base_model_name_or_path): give --model", cmd, adapter)
	}
	if a.Base.Revision != "" {
		return a.Base.NameOrPath + "@" + a.Base.Revision, nil
	}
	return a.Base.NameOrPath, nil
}

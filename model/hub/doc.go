// Package hub finds a model the way transformers does: a local directory first; else a Hugging
// Face Hub id, ORG/NAME[@REVISION], read from the Hugging Face cache, or downloaded into it.
//
// The cache is huggingface_hub's, shared with Python programs on the same host:
//
//	$HF_HUB_CACHE (default $HF_HOME/hub, HF_HOME default ~/.cache/huggingface)
//	  models--ORG--NAME/
//	    refs/REVISION              the commit a branch or tag resolved to, as text
//	    blobs/ETAG                 file contents, named by their hash (sha256 for LFS files,
//	                               the git blob sha1 for small ones)
//	    blobs/ETAG.incomplete      a download in progress (resumed with an HTTP Range request)
//	    snapshots/COMMIT/FILE  ->  ../../blobs/ETAG
//	  .locks/models--ORG--NAME/ETAG.lock
//
// A download asks $HF_ENDPOINT's API for the revision's commit and file list with hashes
// (GET /api/models/ORG/NAME/revision/REV?blobs=true), then fetches only what the loader reads
// (config.json, generation_config.json, the safetensors weights with their index, the tokenizer
// files and the chat template) from /ORG/NAME/resolve/COMMIT/FILE, Options.Workers files at once
// (the loader files, then the weights their index names). Every file is checked against
// the hash the Hub gave before it is moved into blobs/ and linked into the snapshot: a wrong or
// truncated download never appears in snapshots/; what a server sends beyond a file's listed size
// is never kept. Every request runs under a deadline (HF_HUB_ETAG_TIMEOUT, HF_HUB_DOWNLOAD_TIMEOUT:
// deadline.go), revisions are checked as git checks ref names before they name anything in the
// cache, and a server's text is escaped (package untrusted) before it reaches an error. HF_TOKEN (or the token file huggingface-cli
// writes) is sent as a Bearer token. With HF_HUB_OFFLINE=1 nothing touches the network; a model
// that is not cached is an error saying so. When the Hub cannot be reached, a cached snapshot of
// the revision is used, as huggingface_hub does.
//
// Nothing here imports torch: the package resolves names to directories, and the loaders read
// them.
package hub

# mtgrpo for multi-GPU hosts and managed training jobs (docs/docker.md). Needs BuildKit (the
# default builder since Docker 23; DOCKER_BUILDKIT=1 before that).
#
#   docker build -t mtgrpo .                              # BASE=pytorch: the official PyTorch CUDA image
#   docker build -t mtgrpo --build-arg BASE=trixie .      # Debian trixie with Debian's CUDA libtorch 2.6
#   docker build -t mtgrpo --secret id=extra_ca,src=/etc/ssl/certs/ca-certificates.crt ...
#                                                         # behind a TLS-inspecting proxy
#   docker run --gpus all -v $PWD/runs:/runs mtgrpo train --nproc 8 --device cuda --run-dir /runs/x ...
#
# Go is in the build stage only; the final image has bin/mtgrpo, bin/mtgrpo-sandbox (the python
# tool's helper) and the shim under /opt/mtgrpo. The RUN steps are scripts (scripts/docker/),
# mounted from the build context rather than copied into layers (only those scripts: a change
# elsewhere in scripts/ keeps the package layers cached); `make check-cuda-build` runs the
# trixie ones in a trixie root, and `make check-docker` builds the trixie image and runs it.
#
# Build arguments:
#   BASE             pytorch or trixie
#   PYTORCH_DEVEL, PYTORCH_RUNTIME, TRIXIE
#                    the base images
#   GO_IMAGE         an image holding Go in /usr/local/go (the build stage copies it from there)
#   GOPROXY          the Go module proxy of the build (default Go's own)
#   CUDNN_STANDIN=1  trixie only: a stand-in cuDNN instead of NVIDIA's download, for builds
#                    checked without a GPU or network (scripts/lib/cudnn_standin.sh); the runtime
#                    stage takes the stand-in library from the build stage. Never for GPU use.
#   KEEP_EXTRA_CA=1  keep the extra CA certificates (the secret extra_ca) in the final image;
#                    by default only the build uses them (scripts/docker/extra_ca.sh)
ARG BASE=pytorch
ARG PYTORCH_DEVEL=pytorch/pytorch:2.6.0-cuda12.4-cudnn9-devel
ARG PYTORCH_RUNTIME=pytorch/pytorch:2.6.0-cuda12.4-cudnn9-runtime
ARG TRIXIE=debian:trixie
ARG GO_IMAGE=golang:1.26-bookworm

FROM ${GO_IMAGE} AS go

# --- build stages ------------------------------------------------------------------------------
# The extra CA certificates stay in the build stages' trust store: those stages are not shipped.
FROM ${PYTORCH_DEVEL} AS build-pytorch
ENV MTGRPO_TORCH=python
RUN --mount=type=bind,source=scripts/docker,target=/tmp/mtgrpo-scripts/docker --mount=type=secret,id=extra_ca \
    /tmp/mtgrpo-scripts/docker/extra_ca.sh install \
 && /tmp/mtgrpo-scripts/docker/deps-pytorch.sh

FROM ${TRIXIE} AS build-trixie
ARG CUDNN_STANDIN=0
RUN --mount=type=bind,source=scripts/docker,target=/tmp/mtgrpo-scripts/docker \
    --mount=type=bind,source=scripts/lib/cudnn_standin.sh,target=/tmp/mtgrpo-scripts/lib/cudnn_standin.sh \
    --mount=type=secret,id=extra_ca \
    --mount=type=cache,id=mtgrpo-apt-trixie,target=/var/cache/apt/archives,sharing=locked \
    /tmp/mtgrpo-scripts/docker/extra_ca.sh install \
 && MTGRPO_CUDNN_STANDIN=$CUDNN_STANDIN /tmp/mtgrpo-scripts/docker/deps-trixie.sh build \
 && mkdir -p /opt/cudnn-standin \
 && if [ "$CUDNN_STANDIN" = 1 ]; then cp /usr/local/lib/libcudnn.so.9 /opt/cudnn-standin/; fi

FROM build-${BASE} AS build
COPY --from=go /usr/local/go /usr/local/go
ENV PATH=/usr/local/go/bin:$PATH CGO_ENABLED=1
ARG GOPROXY
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN --mount=type=cache,id=mtgrpo-gobuild,target=/root/.cache/go-build scripts/docker/build.sh /opt/mtgrpo

# --- final stages ------------------------------------------------------------------------------
FROM ${PYTORCH_RUNTIME} AS final-pytorch

FROM ${TRIXIE} AS final-trixie
ARG CUDNN_STANDIN=0
# Empty unless CUDNN_STANDIN=1: then the stand-in libcudnn.so.9, built where gcc is.
COPY --from=build-trixie /opt/cudnn-standin/ /usr/local/lib/
RUN --mount=type=bind,source=scripts/docker,target=/tmp/mtgrpo-scripts/docker \
    --mount=type=bind,source=scripts/lib/cudnn_standin.sh,target=/tmp/mtgrpo-scripts/lib/cudnn_standin.sh \
    --mount=type=secret,id=extra_ca \
    --mount=type=cache,id=mtgrpo-apt-trixie,target=/var/cache/apt/archives,sharing=locked \
    /tmp/mtgrpo-scripts/docker/extra_ca.sh install \
 && MTGRPO_CUDNN_STANDIN=$CUDNN_STANDIN /tmp/mtgrpo-scripts/docker/deps-trixie.sh runtime \
 && /tmp/mtgrpo-scripts/docker/extra_ca.sh remove

FROM final-${BASE}
ARG KEEP_EXTRA_CA=0
RUN --mount=type=bind,source=scripts/docker/extra_ca.sh,target=/tmp/extra_ca.sh --mount=type=secret,id=extra_ca \
    if [ "$KEEP_EXTRA_CA" = 1 ]; then /tmp/extra_ca.sh install; fi
COPY --from=build /opt/mtgrpo /opt/mtgrpo
ENV PATH=/opt/mtgrpo/bin:$PATH
WORKDIR /work
ENTRYPOINT ["mtgrpo"]
CMD ["help"]

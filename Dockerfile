# mtgrpo for multi-GPU hosts and managed training jobs (docs/docker.md).
#
#   docker build -t mtgrpo .                              # BASE=pytorch: the official PyTorch CUDA image
#   docker build -t mtgrpo --build-arg BASE=trixie .      # Debian trixie with Debian's CUDA libtorch 2.6
#   docker run --gpus all -v $PWD/runs:/runs mtgrpo train --nproc 8 --device cuda --run-dir /runs/x ...
#
# Go is in the build stage only; the final image has bin/mtgrpo, bin/mtgrpo-sandbox (the python
# tool's helper) and the shim under /opt/mtgrpo. The RUN steps are scripts (scripts/docker/), and
# `make check-cuda-build` runs the trixie ones in a trixie root, so the build is tested where no
# Docker engine runs.
ARG BASE=pytorch
ARG PYTORCH_DEVEL=pytorch/pytorch:2.6.0-cuda12.4-cudnn9-devel
ARG PYTORCH_RUNTIME=pytorch/pytorch:2.6.0-cuda12.4-cudnn9-runtime
ARG TRIXIE=debian:trixie
ARG GO_IMAGE=golang:1.26-bookworm

FROM ${GO_IMAGE} AS go

# --- build stages ------------------------------------------------------------------------------
FROM ${PYTORCH_DEVEL} AS build-pytorch
ENV MTGRPO_TORCH=python
COPY scripts/docker/deps-pytorch.sh /tmp/deps.sh
RUN /tmp/deps.sh

FROM ${TRIXIE} AS build-trixie
COPY scripts/docker/deps-trixie.sh /tmp/docker/deps-trixie.sh
COPY scripts/lib/cudnn_standin.sh /tmp/lib/cudnn_standin.sh
RUN /tmp/docker/deps-trixie.sh build

FROM build-${BASE} AS build
COPY --from=go /usr/local/go /usr/local/go
ENV PATH=/usr/local/go/bin:$PATH CGO_ENABLED=1
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN scripts/docker/build.sh /opt/mtgrpo

# --- final stages ------------------------------------------------------------------------------
FROM ${PYTORCH_RUNTIME} AS final-pytorch

FROM ${TRIXIE} AS final-trixie
COPY scripts/docker/deps-trixie.sh /tmp/docker/deps-trixie.sh
COPY scripts/lib/cudnn_standin.sh /tmp/lib/cudnn_standin.sh
RUN /tmp/docker/deps-trixie.sh runtime && rm -rf /tmp/docker /tmp/lib

FROM final-${BASE}
COPY --from=build /opt/mtgrpo /opt/mtgrpo
ENV PATH=/opt/mtgrpo/bin:$PATH
WORKDIR /work
ENTRYPOINT ["mtgrpo"]
CMD ["help"]

# The versions of the real-VS-Code test's tools and where they are installed (sourced by
# install.sh and ../../test.sh). code-server 4.100.x is VS Code 1.100 and wants Node 20; later
# releases want Node 22 or 24.
CODE_SERVER_VERSION=${CODE_SERVER_VERSION:-4.100.3}
PLAYWRIGHT_CORE_VERSION=${PLAYWRIGHT_CORE_VERSION:-1.65.1}
CODE_SERVER_PREFIX=${CODE_SERVER_PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/diffusion-lsp/code-server/$CODE_SERVER_VERSION}

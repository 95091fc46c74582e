"""DirectML itself as an oracle: the release DirectML.dll under Wine + vkd3d on Mesa 25's lavapipe
(ci/directml.sh sets it up). oracle: the program dml_oracle.exe (dml_oracle.c, dml_api.h) and its
batches of cases; compare: dmlvk's descriptions and outputs against its answers."""

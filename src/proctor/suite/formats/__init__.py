"""Foreign suite formats, translated at the edge into the canonical model.

`watsonx`: IBM watsonx Orchestrate ground-truth datasets (one JSON file per case).
"""

from proctor.suite.formats.watsonx import WatsonxDataset, is_watsonx_dataset, load_watsonx_file

__all__ = ["WatsonxDataset", "is_watsonx_dataset", "load_watsonx_file"]
